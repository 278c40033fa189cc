//! No command destroys a file it was given: an output that is one of the
//! command's inputs is refused before any work (one line, exit 2, the input
//! unchanged); a symlink output replaces its target and stays a link; a fifo
//! is written to, not replaced; `/dev/full` is an error; a user's `.tmp` file
//! beside the output is left alone; an unknown output format is named; Ctrl-C
//! during a write removes the temporary and keeps the old output.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fno_datasets::npy::{self, DType, NpyArray};

/// Runs `fno`, killed after a minute (a command stuck on a fifo or a
/// device fails the test instead of hanging it).
fn fno(args: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fno"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("fno {args:?} still running after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// A fresh directory of its own for each test.
fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fno-output-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A 16-value real array.
fn write_input(path: &Path) {
    let data: Vec<f32> = (0..16).map(|i| i as f32).collect();
    npy::write(path, &NpyArray::new(vec![16], DType::F32, data)).unwrap();
}

/// Exit 2 with one `error:` line that contains every one of `words`.
fn assert_refused(out: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    for w in words {
        assert!(lines[0].contains(w), "{w:?} missing from {stderr}");
    }
}

#[test]
fn outputs_that_are_inputs_are_refused_and_the_inputs_kept() {
    let d = dir("same");
    let x = d.join("x.npy");
    write_input(&x);
    let before = std::fs::read(&x).unwrap();
    // The input as the output, directly and through a link.
    assert_refused(
        &fno(&["fft", "--input", s(&x), "--output", s(&x)]),
        &["--output", "--input", "same file"],
    );
    let link = d.join("link.npy");
    std::os::unix::fs::symlink(&x, &link).unwrap();
    assert_refused(&fno(&["fft", "--input", s(&x), "--output", s(&link)]), &["same file"]);
    let values = d.join("v.npy");
    write_input(&values);
    let nufft = [
        "nufft",
        "--type",
        "1",
        "--points",
        s(&x),
        "--values",
        s(&values),
        "--modes",
        "8",
    ];
    assert_refused(&fno(&[&nufft[..], &["--output", s(&values)]].concat()), &["--values"]);
    // A checkpoint, a dataset: refused before they are read.
    let model = d.join("m.npy");
    std::fs::write(&model, b"not read").unwrap();
    let infer = [
        "infer",
        "--checkpoint",
        s(&model),
        "--input",
        s(&x),
        "--output",
        s(&model),
    ];
    assert_refused(&fno(&infer), &["--checkpoint"]);
    let data = d.join("d.npy");
    std::fs::write(&data, b"not read either").unwrap();
    let eval = [
        "eval",
        "--checkpoint",
        s(&model),
        "--data",
        s(&data),
        "--predictions",
        s(&data),
    ];
    assert_refused(&fno(&eval), &["--predictions", "--data"]);
    assert_eq!(std::fs::read(&x).unwrap(), before, "the input changed");
    assert_eq!(std::fs::read(&model).unwrap(), b"not read");
    assert_eq!(std::fs::read(&data).unwrap(), b"not read either");
}

#[test]
fn a_run_directory_holding_the_training_data_is_refused() {
    let d = dir("train");
    let run = d.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let data = run.join("last.safetensors");
    std::fs::write(&data, b"a user's data set").unwrap();
    let config = d.join("c.toml");
    let text = format!(
        "[model]\nn_modes = [4, 4]\nin_channels = 1\nout_channels = 1\nhidden_channels = 4\nn_layers = 1\n\
         [data.train]\nfile = \"{}\"\n[[data.tests]]\nfile = \"{}\"\n\
         [optim]\nepochs = 1\nbatch_size = 1\nlr = 1e-3\nweight_decay = 0.0\nloss = \"l2\"\n\
         [run]\nout_dir = \"{}\"\n",
        s(&data),
        s(&data),
        s(&run)
    );
    std::fs::write(&config, text).unwrap();
    let out = fno(&["train", "--config", s(&config), "--overwrite"]);
    assert_refused(&out, &["last.safetensors", "data file"]);
    assert_eq!(std::fs::read(&data).unwrap(), b"a user's data set");
}

#[test]
fn links_fifos_devices_and_temporaries_are_kept() {
    let d = dir("kinds");
    let x = d.join("x.npy");
    write_input(&x);
    let run = |output: &Path| fno(&["fft", "--input", s(&x), "--output", s(output), "--real"]);
    // A symlink: its target replaced, the link kept.
    let target = d.join("target.npy");
    std::fs::write(&target, b"old").unwrap();
    let link = d.join("out.npy");
    std::os::unix::fs::symlink("target.npy", &link).unwrap();
    let out = run(&link);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
        "the link was replaced"
    );
    let written = npy::read(&target).unwrap();
    assert_eq!((written.shape.as_slice(), written.dtype), (&[9][..], DType::C64));
    // A user's file named like a temporary, beside the output: untouched.
    let plain = d.join("plain.npy");
    let theirs = d.join("plain.npy.tmp");
    std::fs::write(&theirs, b"mine").unwrap();
    assert!(run(&plain).status.success());
    assert_eq!(std::fs::read(&theirs).unwrap(), b"mine");
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "temporaries left: {left:?}");
    // A fifo with a reader: written to, still a fifo.
    let fifo = d.join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let out = run(&fifo);
    if !reader.is_finished() {
        // Releases a reader still waiting for a writer, so the assertion below speaks.
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc_nonblock())
            .open(&fifo);
    }
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bytes = reader.join().unwrap();
    assert_eq!(&bytes[..6], b"\x93NUMPY", "the fifo's reader got no .npy");
    assert!(
        std::fs::metadata(&fifo).unwrap().file_type().is_fifo(),
        "the fifo was replaced"
    );
    // /dev/full: no space, an error.
    assert_refused(&run(Path::new("/dev/full")), &["/dev/full"]);
    // A device node of our own, where we may make one (root): written to, kept.
    let null = d.join("null");
    if Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .status()
        .is_ok_and(|s| s.success())
    {
        assert!(run(&null).status.success());
        assert!(
            std::fs::metadata(&null).unwrap().file_type().is_char_device(),
            "the device node was replaced"
        );
    }
}

#[test]
fn unknown_output_formats_are_named() {
    let d = dir("format");
    let x = d.join("x.npy");
    write_input(&x);
    let out = fno(&["fft", "--input", s(&x), "--output", s(&d.join("y.txt"))]);
    assert_refused(&out, &["y.txt", ".npy"]);
    assert!(!d.join("y.txt").exists());
}

/// `O_NONBLOCK` on Linux.
fn libc_nonblock() -> i32 {
    0o4000
}

/// The temporaries in `dir` of output `name` (`.NAME.XXXXXX.tmp`).
fn temporaries(dir: &Path, name: &str) -> Vec<PathBuf> {
    let prefix = format!(".{name}.");
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let f = p.file_name().unwrap().to_string_lossy();
            f.starts_with(&prefix) && f.ends_with(".tmp")
        })
        .collect()
}

/// Ctrl-C while an output is being written: the temporary goes, the old
/// output stays as it was, and the exit status is the signal's (130).
#[test]
fn an_interrupted_write_leaves_the_old_output_and_no_temporary() {
    let d = dir("interrupt");
    let (x, y) = (d.join("x.npy"), d.join("y.npy"));
    // 2²⁴ values: a 128 MB complex output, written and synced for long
    // enough that the temporary is seen.
    let data: Vec<f32> = (0..1 << 24).map(|i| (i % 7) as f32).collect();
    npy::write(&x, &NpyArray::new(vec![16, 1 << 20], DType::F32, data)).unwrap();
    write_input(&y);
    let before = std::fs::read(&y).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fno"))
        .args(["fft", "--input", s(&x), "--output", s(&y), "--backend", "cpu"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let seen = loop {
        if !temporaries(&d, "y.npy").is_empty() {
            break true;
        }
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(seen, "the temporary was never seen: the write ended first");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "exit status after SIGINT: {status:?}");
    assert!(temporaries(&d, "y.npy").is_empty(), "a temporary was left");
    assert_eq!(std::fs::read(&y).unwrap(), before, "the old output changed");
    let _ = std::fs::remove_dir_all(&d);
}
