//! Bad numbers on the command line: a negative count or size is named with
//! its flag in one line (exit 2), not read as an unknown flag; sizes past
//! the machine are refused before anything is allocated (once aborts deep in
//! an allocation or the FFT planner); clap's own errors are one line too.

use std::process::Command;

/// Runs `fno args` under a 4 GB address-space cap (as the repros):
/// one `error:` line on stderr, exit 2.
fn one_error_line(args: &[&str]) -> String {
    let out = Command::new("sh")
        .args(["-c", "ulimit -v 4000000; exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_fno")])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    stderr
}

#[test]
fn negative_counts_and_sizes_name_their_flag() {
    for (args, flag) in [
        (
            &[
                "nufft", "--type", "1", "--points", "p.npy", "--values", "v.npy", "--modes", "-3", "--output", "o.npy",
            ][..],
            "--modes",
        ),
        (
            &[
                "nufft", "--type", "1", "--points", "p.npy", "--values", "v.npy", "--modes", "8,-3", "--output",
                "o.npy",
            ][..],
            "--modes",
        ),
        (
            &["fft", "--input", "x.npy", "--output", "y.npy", "--n", "-5"][..],
            "--n",
        ),
        (&["demo", "--size", "-3"][..], "--size"),
        (&["train", "--devices", "-2"][..], "--devices"),
        (
            &[
                "data",
                "generate",
                "darcy",
                "--n",
                "-1",
                "--res",
                "16",
                "--out",
                "a.safetensors",
            ][..],
            "--n",
        ),
        (
            &[
                "infer",
                "--checkpoint",
                "m",
                "--input",
                "x",
                "--output",
                "y.npy",
                "--batch-size",
                "-4",
            ][..],
            "--batch-size",
        ),
    ] {
        let line = one_error_line(args);
        assert!(line.contains(flag) && line.contains("negative"), "{args:?}: {line}");
    }
}

#[test]
fn clap_errors_are_one_line() {
    let line = one_error_line(&["fft", "--input", "x.npy"]);
    assert!(line.contains("--output"), "{line}");
    let line = one_error_line(&["demo", "--bogus"]);
    assert!(line.contains("--bogus"), "{line}");
}

#[test]
fn sizes_past_the_machine_are_refused_before_allocating() {
    let dir = std::env::temp_dir().join(format!("fno-numbers-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = dir.join("x.npy");
    let values: Vec<f32> = (0..16).map(|i| i as f32).collect();
    fno_datasets::npy::write(
        &x,
        &fno_datasets::npy::NpyArray::new(vec![16], fno_datasets::npy::DType::F32, values),
    )
    .unwrap();
    let (x, y) = (x.to_str().unwrap(), dir.join("y.npy"));
    let y = y.to_str().unwrap();
    for n in ["2147483648", "1000000000000"] {
        let line = one_error_line(&["fft", "--input", x, "--output", y, "--n", n, "--backend", "cpu"]);
        assert!(line.contains("GB on the CPU"), "--n {n}: {line}");
    }
    let line = one_error_line(&["demo", "--size", "1073741824", "--backend", "cpu"]);
    assert!(line.contains("--size") && line.contains("GB on the CPU"), "{line}");
    // Within the generator's limits, past the cap: refused before any solve.
    let out = dir.join("d.npz");
    let out = out.to_str().unwrap();
    let line = one_error_line(&[
        "data", "generate", "darcy", "--n", "1000", "--res", "1024", "--out", out,
    ]);
    assert!(
        line.contains("this data set needs") && line.contains("GB on the CPU"),
        "{line}"
    );
    assert!(!dir.join("d.npz").exists());
    // Refused before any data are generated (once: generated, then aborted).
    let line = one_error_line(&["train", "--devices", "100000", "--backend", "cpu", "--out", y]);
    assert!(line.contains("--devices 100000") && line.contains("cores"), "{line}");
    assert!(!dir.join("y.npy").exists() && !dir.join("cache").exists());
}

/// A train config on `train` and `test` data files, run in `dir`.
fn train_on(dir: &std::path::Path, train: &str, test: &str, stride: usize) -> String {
    let config = dir.join(format!("c{stride}.toml"));
    let text = format!(
        "[model]\nn_modes = [4, 4]\nin_channels = 1\nout_channels = 1\nhidden_channels = 4\nn_layers = 1\n\
         [data.train]\nfile = \"{train}\"\nstride = {stride}\n[[data.tests]]\nfile = \"{test}\"\n\
         [optim]\nepochs = 1\nbatch_size = 2\nlr = 1e-3\nweight_decay = 0.0\nloss = \"l2\"\n\
         [run]\nout_dir = \"{}\"\n",
        dir.join(format!("run{stride}")).display()
    );
    std::fs::write(&config, text).unwrap();
    one_error_line(&["train", "--config", config.to_str().unwrap(), "--backend", "cpu"])
}

/// What once succeeded silently: a 2-point grid generated, a stride leaving
/// one point a side, a test set of NaN scored as NaN.
#[test]
fn degenerate_grids_and_non_finite_data_are_errors() {
    use fno_datasets::{Array, PdeDataset};
    let dir = std::env::temp_dir().join(format!("fno-degenerate-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("d.safetensors");
    let line = one_error_line(&[
        "data",
        "generate",
        "darcy",
        "--n",
        "2",
        "--res",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(line.contains("res 2"), "{line}");
    assert!(!out.exists());
    let set = |values: Vec<f32>| {
        let array = |v: Vec<f32>| Array::new(vec![4, 1, 16, 16], v).unwrap();
        PdeDataset::new(array(values.clone()), array(values)).unwrap()
    };
    let fine: Vec<f32> = (0..4 * 256).map(|i| (i % 7) as f32).collect();
    let mut holed = fine.clone();
    holed[2 * 256 + 5] = f32::NAN;
    let (good, bad) = (dir.join("good.safetensors"), dir.join("nan.safetensors"));
    fno_datasets::save(&good, &set(fine)).unwrap();
    fno_datasets::save(&bad, &set(holed)).unwrap();
    let (good, bad) = (good.to_str().unwrap(), bad.to_str().unwrap());
    let line = train_on(&dir, good, bad, 1);
    assert!(
        line.contains("nan") && line.contains("sample 2") && line.contains("NaN"),
        "{line}"
    );
    let line = train_on(&dir, good, good, 100);
    assert!(line.contains("stride 100") && line.contains("[1, 1]"), "{line}");
}
