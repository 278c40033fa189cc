//! `fno data` end to end: `info` on neuraloperator's Darcy file (keys, dtypes,
//! shapes, ranges) and on a file it cannot read (one error line naming it,
//! exit code 2).

use fno_testing::scratch_file;
use std::process::Command;

fn fno(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fno")).args(args).output().unwrap()
}

#[test]
fn info_lists_keys_dtypes_shapes_and_ranges() {
    let pt = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/neuralop/darcy_test_16.pt");
    let out = fno(&["data", "info", pt.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = |key: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no line for {key} in:\n{text}"))
            .to_string()
    };
    let x = line("x ");
    assert!(
        x.contains("bool") && x.contains("[50, 16, 16]") && x.contains("min 0") && x.contains("max 1"),
        "{x}"
    );
    assert!(line("y ").contains("float32"), "{text}");
}

#[test]
fn unreadable_files_are_one_line_errors() {
    let path = std::env::temp_dir().join(format!("fno-data-info-{}.npz", std::process::id()));
    std::fs::write(&path, b"not a zip").unwrap();
    let out = fno(&["data", "info", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("error: ") && err.contains(path.to_str().unwrap()),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn generate_writes_a_loadable_data_set_with_progress() {
    for (args, out, x_shape, y_shape) in [
        (
            &["darcy", "--res", "9", "--fine", "17"][..],
            "darcy.safetensors",
            vec![3, 1, 9, 9],
            vec![3, 1, 9, 9],
        ),
        (
            &[
                "burgers", "--res", "32", "--fine", "64", "--time", "0.01", "--dt", "1e-3",
            ],
            "burgers.npz",
            vec![3, 1, 32],
            vec![3, 1, 32],
        ),
        (
            &[
                "navier-stokes",
                "--res",
                "8",
                "--time",
                "0.02",
                "--every",
                "0.01",
                "--dt",
                "1e-3",
            ],
            "ns.safetensors",
            vec![3, 1, 8, 8],
            vec![3, 2, 8, 8],
        ),
    ] {
        let path = scratch_file("data-cli", out);
        let mut all = vec!["data", "generate"];
        all.extend(args);
        all.extend(["--n", "3", "--seed", "2", "--out", path.to_str().unwrap()]);
        let run = fno(&all);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains("3/3 samples"), "no progress in {stderr:?}");
        assert!(String::from_utf8_lossy(&run.stdout).contains("wrote"));
        let data = fno_datasets::load(&path, &Default::default()).unwrap();
        assert_eq!(
            (data.inputs.shape.clone(), data.outputs.shape.clone()),
            (x_shape, y_shape),
            "{args:?}"
        );
        assert_eq!(data.metadata["pde"], args[0]);
        assert_eq!(data.metadata["seed"], "2");
        assert!(data.outputs.data.iter().all(|v| v.is_finite()) && data.outputs.range().1 > data.outputs.range().0);
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn generate_refuses_bad_requests_before_working() {
    let cases = [
        (
            &["darcy", "--n", "2", "--res", "9", "--out", "data.txt"][..],
            "unknown output format",
        ),
        (
            &["darcy", "--n", "2", "--res", "9", "--out", "/no/such/dir/d.npz"],
            "does not exist",
        ),
        (
            &["darcy", "--n", "2", "--res", "9", "--time", "1", "--out", "d.npz"],
            "not darcy",
        ),
        (
            &["darcy", "--n", "2", "--res", "9", "--fine", "20", "--out", "d.npz"],
            "not a subsampling",
        ),
        (
            &["burgers", "--n", "2", "--res", "100", "--out", "b.npz"],
            "must divide",
        ),
        (&["navier-stokes", "--n", "0", "--res", "8", "--out", "n.npz"], "n = 0"),
        // Sizes that would allocate or run without end are refused up front.
        (
            &["darcy", "--n", "100000000", "--res", "16", "--out", "d.npz"],
            "samples",
        ),
        (
            &["darcy", "--n", "2", "--res", "100000", "--out", "d.npz"],
            "solve points",
        ),
        (
            &["darcy", "--n", "100000", "--res", "255", "--out", "d.npz"],
            "values, at most",
        ),
        (
            &[
                "navier-stokes",
                "--n",
                "1",
                "--res",
                "8",
                "--time",
                "1e9",
                "--out",
                "n.npz",
            ],
            "snapshots",
        ),
        (
            &["burgers", "--n", "1", "--res", "64", "--time", "1e9", "--out", "b.npz"],
            "time steps",
        ),
    ];
    for (args, message) in cases {
        let mut all = vec!["data", "generate"];
        all.extend(args);
        let run = fno(&all);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(message),
            "{args:?}: {stderr}"
        );
    }
}

/// With the `hdf5` feature an `.h5` file round-trips through `generate` and
/// `info`; without it both refuse it in one line that names the feature.
#[test]
fn hdf5_files_work_with_the_feature_and_name_it_without() {
    let path = std::env::temp_dir().join(format!("fno-data-h5-{}.h5", std::process::id()));
    let out = path.to_str().unwrap();
    let generate = fno(&["data", "generate", "darcy", "--n", "2", "--res", "9", "--out", out]);
    let info = fno(&["data", "info", out]);
    if fno_datasets::HDF5 {
        assert!(
            generate.status.success(),
            "{}",
            String::from_utf8_lossy(&generate.stderr)
        );
        let text = String::from_utf8(info.stdout).unwrap();
        assert!(text.contains("[2, 1, 9, 9]"), "{text}");
        std::fs::remove_file(&path).unwrap();
    } else {
        for run in [generate, info] {
            let err = String::from_utf8(run.stderr).unwrap();
            assert_eq!(run.status.code(), Some(2), "{err}");
            assert!(err.starts_with("error: ") && err.contains("`hdf5` feature"), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
        assert!(!path.exists());
    }
}
