//! Bad numbers on the command line: a negative count or size is named with
//! its flag in one line (exit 2), not read as an unknown flag; clap's own
//! errors are one line too.

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
