//! `fno infer` end to end on neuraloperator's fixture checkpoint
//! (../shared/fixtures/neuralop/fno2d_small): PyTorch's output reproduced on the
//! CPU (reference path) and on wgpu (kernel path), in batches, and the error
//! contract (one line, exit code 2, nothing written).

use std::path::PathBuf;
use std::process::Command;

use fno_datasets::npy::{self, DType, NpyArray};
use fno_kernels::testing::relative_l2_f32 as rel_l2;

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/neuralop/fno2d_small")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fno-infer-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn infer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fno"))
        .arg("infer")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn fixture_output_reproduced_on_cpu_and_wgpu() {
    let want = npy::read(fixture("y.npy")).unwrap();
    for (checkpoint, backend, imp, batch) in [
        ("model.safetensors", "cpu", "reference", "3"),
        ("model_real.safetensors", "wgpu", "unfused", "16"),
        ("model_real.safetensors", "wgpu", "reference", "2"),
    ] {
        let out = scratch(&format!("y-{backend}-{imp}.npy"));
        let run = infer(&[
            "--checkpoint",
            &fixture(checkpoint),
            "--config",
            &fixture("config.json"),
            "--input",
            &fixture("x.npy"),
            "--output",
            out.to_str().unwrap(),
            "--backend",
            backend,
            "--impl",
            imp,
            "--batch-size",
            batch,
        ]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{checkpoint} {backend} {imp}: {stderr}");
        let got = npy::read(&out).unwrap();
        assert_eq!(got.shape, want.shape);
        let e = rel_l2(&got.data, &want.data);
        assert!(e <= 1e-5, "{checkpoint} {backend} {imp}: {e:e}");
    }
}

#[test]
fn bad_requests_are_one_error_line_exit_2_and_no_output() {
    let two_channels = scratch("two-channels.npy");
    npy::write(
        &two_channels,
        &NpyArray::new(vec![1, 2, 8, 8], DType::F32, vec![0.0; 128]),
    )
    .unwrap();
    let complex = scratch("complex.npy");
    npy::write(&complex, &NpyArray::new(vec![1, 1, 8, 8], DType::C64, vec![0.0; 128])).unwrap();
    let (model, config, x) = (fixture("model.safetensors"), fixture("config.json"), fixture("x.npy"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--checkpoint", "/nonexistent.safetensors", "--input", &x],
            "No such file",
        ),
        (vec!["--checkpoint", &config, "--input", &x], "runs past the end"),
        (vec!["--checkpoint", &model, "--config", &x, "--input", &x], "not UTF-8"),
        (
            vec!["--checkpoint", &model, "--input", two_channels.to_str().unwrap()],
            "input channels",
        ),
        (
            vec!["--checkpoint", &model, "--input", complex.to_str().unwrap()],
            "float32",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--impl", "fast"],
            "unknown --impl",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--impl", "unfused"],
            "Reference",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--batch-size", "0"],
            "positive",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--fft-planning", "fast"],
            "unknown planning",
        ),
    ];
    for (args, expected) in cases {
        let out_path = scratch("must-not-exist.npy");
        let _ = std::fs::remove_file(&out_path);
        let mut all = args.clone();
        all.extend(["--output", out_path.to_str().unwrap(), "--backend", "cpu"]);
        let out = infer(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: '{stderr}' lacks '{expected}'");
        assert!(!out_path.exists(), "{args:?}: output written despite the error");
    }
}
