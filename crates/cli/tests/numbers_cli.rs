//! Bad numbers on the command line: a negative count or size is named with
//! its flag in one line (exit 2), not read as an unknown flag; sizes past
//! the machine are refused before anything is allocated (once aborts deep in
//! an allocation or the FFT planner); clap's own errors are one line too.

use std::process::Command;

fn one_error_line(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fno")).args(args).output().unwrap();
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
    // Refused before any data are generated (once: generated, then aborted).
    let line = one_error_line(&["train", "--devices", "100000", "--backend", "cpu", "--out", y]);
    assert!(line.contains("--devices 100000") && line.contains("cores"), "{line}");
    assert!(!dir.join("y.npy").exists() && !dir.join("cache").exists());
}
