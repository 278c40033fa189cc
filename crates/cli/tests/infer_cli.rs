//! `fno infer` end to end on neuraloperator's fixture checkpoint
//! (../shared/fixtures/neuralop/fno2d_small): PyTorch's output reproduced on the
//! CPU (reference path), on wgpu (kernel path) and by the Candle engine, in
//! batches, from float32 and float64 inputs, and the error contract (one line,
//! exit code 2, nothing written; clap's own usage errors list the accepted
//! values). Checkpoints of `fno train` are covered in train_cli.rs.

use std::process::Command;

use fno_datasets::npy::{self, DType, NpyArray};
use fno_testing::relative_l2_f32 as rel_l2;
use fno_testing::scratch_file;

fn fixture(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/fixtures/neuralop/fno2d_small")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// A file of the neuraloperator checkpoint fixture `case` (models/tests/fixtures/torch).
fn torch(case: &str, name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../models/tests/fixtures/torch")
        .join(case)
        .join(name)
        .to_string_lossy()
        .into_owned()
}

fn infer(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fno"))
        .arg("infer")
        .args(args)
        .output()
        .unwrap()
}

/// Also under checksums (`--fault-tolerance correct`): the same output, and
/// the counts reported (none on a fault-free run); and by the Candle engine
/// (`candle` in place of an implementation: `--engine candle`); on wgpu
/// without Burn fusion (the default) and with it, GELU by our kernel or by
/// Burn's ops (`on-burn-ops`).
#[test]
fn fixture_output_reproduced_on_cpu_wgpu_and_candle() {
    let want = npy::read(fixture("y.npy")).unwrap();
    for (checkpoint, backend, imp, batch, tolerance, fusion) in [
        ("model.safetensors", "cpu", "reference", "3", "off", "on"),
        ("model_real.safetensors", "cpu", "unfused", "4", "off", "on"),
        ("model_real.safetensors", "wgpu", "unfused", "16", "off", "on"),
        ("model_real.safetensors", "wgpu", "unfused", "16", "off", "off"),
        ("model_real.safetensors", "wgpu", "auto", "7", "off", "on-burn-ops"),
        ("model_real.safetensors", "wgpu", "unfused", "5", "correct", "on"),
        ("model_real.safetensors", "wgpu", "reference", "2", "off", "on"),
        ("model.safetensors", "cpu", "candle", "3", "off", "on"),
        ("model_real.safetensors", "cpu", "candle", "16", "off", "on"),
    ] {
        let out = scratch_file(
            "infer-cli",
            &format!("y-{backend}-{imp}-{tolerance}-{fusion}-{checkpoint}.npy"),
        );
        let (checkpoint_path, config, x) = (fixture(checkpoint), fixture("config.json"), fixture("x.npy"));
        let mut args = vec!["--checkpoint", &checkpoint_path, "--config", &config, "--input", &x];
        args.extend(["--output", out.to_str().unwrap(), "--batch-size", batch]);
        if imp == "candle" {
            args.extend(["--engine", "candle"]);
        } else {
            args.extend(["--backend", backend, "--impl", imp, "--fault-tolerance", tolerance]);
            args.extend(["--burn-fusion", fusion]);
        }
        let run = infer(&args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{checkpoint} {backend} {imp}: {stderr}");
        let reported = stderr.contains("fault tolerance (Correct): 0 detected, 0 corrected");
        assert_eq!(reported, tolerance == "correct", "{stderr}");
        assert_eq!(stderr.contains("Candle, cpu"), imp == "candle", "{stderr}");
        // The rate once compiled, where batches came after the first.
        let several = batch.parse::<usize>().unwrap() < want.shape[0];
        assert_eq!(stderr.contains(" samples/s after the first batch"), several, "{stderr}");
        let got = npy::read(&out).unwrap();
        assert_eq!(got.shape, want.shape);
        let e = rel_l2(&got.data, &want.data);
        assert!(e <= 1e-5, "{checkpoint} {backend} {imp}: {e:e}");
    }
}

#[test]
fn bad_requests_are_one_error_line_exit_2_and_no_output() {
    let two_channels = scratch_file("infer-cli", "two-channels.npy");
    npy::write(
        &two_channels,
        &NpyArray::new(vec![1, 2, 8, 8], DType::F32, vec![0.0; 128]),
    )
    .unwrap();
    let complex = scratch_file("infer-cli", "complex.npy");
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
            "complex",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--threads", "0"],
            "--threads must be positive",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--fault-tolerance", "detect"],
            "unfused kernel path",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--batch-size", "0"],
            "positive",
        ),
        (
            vec!["--checkpoint", &model, "--input", &x, "--input-key", "a"],
            "no tensor 'a'",
        ),
        (
            vec![
                "--checkpoint",
                &model,
                "--input",
                &x,
                "--engine",
                "candle",
                "--impl",
                "fused",
            ],
            "--impl sets the Burn engine",
        ),
        (
            vec![
                "--checkpoint",
                &model,
                "--input",
                &x,
                "--engine",
                "candle",
                "--burn-fusion",
                "on",
            ],
            "--burn-fusion sets the Burn engine",
        ),
        (
            vec![
                "--checkpoint",
                &model,
                "--input",
                two_channels.to_str().unwrap(),
                "--engine",
                "candle",
            ],
            "input channels",
        ),
        (
            vec!["--checkpoint", &config, "--input", &x, "--engine", "candle"],
            "runs past the end",
        ),
        // This build has no Candle CUDA device (the candle-cuda feature).
        (
            vec![
                "--checkpoint",
                &model,
                "--input",
                &x,
                "--engine",
                "candle",
                "--backend",
                "cuda",
            ],
            "built without the candle-cuda feature",
        ),
    ];
    for (args, expected) in cases {
        let out_path = scratch_file("infer-cli", "must-not-exist.npy");
        let _ = std::fs::remove_file(&out_path);
        let mut all = args.clone();
        all.extend(["--output", out_path.to_str().unwrap()]);
        if !args.contains(&"--backend") {
            all.extend(["--backend", "cpu"]);
        }
        let out = infer(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: '{stderr}' lacks '{expected}'");
        assert!(!out_path.exists(), "{args:?}: output written despite the error");
    }
}

/// `values` as a little-endian float64 `.npy` (numpy's default dtype).
fn write_f64_npy(path: &std::path::Path, shape: &[usize], values: &[f32]) {
    let data: Vec<u8> = values.iter().flat_map(|&v| (v as f64).to_le_bytes()).collect();
    crate::write_raw_npy(path, "<f8", shape, &data);
}

/// numpy's default float64, stored as [samples, *grid] without the channel
/// dim of the one-channel model, gives PyTorch's output too.
#[test]
fn float64_inputs_without_a_channel_dim_are_read() {
    let x = npy::read(fixture("x.npy")).unwrap();
    let want = npy::read(fixture("y.npy")).unwrap();
    let wide = scratch_file("infer-cli", "x-f64.npy");
    write_f64_npy(&wide, &[x.shape[0], x.shape[2], x.shape[3]], &x.data);
    let out = scratch_file("infer-cli", "y-from-f64.npy");
    let run = infer(&[
        "--checkpoint",
        &fixture("model.safetensors"),
        "--config",
        &fixture("config.json"),
        "--input",
        wide.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--backend",
        "cpu",
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let got = npy::read(&out).unwrap();
    assert_eq!(got.shape, want.shape);
    let e = rel_l2(&got.data, &want.data);
    assert!(e <= 1e-5, "{e:e}");
}

/// Enum flags are clap value enums: a wrong value is refused before any work,
/// with the accepted values listed.
#[test]
fn enum_flags_list_their_values() {
    let x = fixture("x.npy");
    let model = fixture("model.safetensors");
    for (flag, value, listed) in [
        ("--impl", "fast", "reference, unfused, fused"),
        ("--backend", "tpu", "auto, cuda, wgpu, cpu"),
        ("--fft-planning", "fast", "rules, measured"),
    ] {
        let out = infer(&["--checkpoint", &model, "--input", &x, "--output", "y.npy", flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("invalid value '{value}'")) && stderr.contains(listed),
            "{stderr}"
        );
    }
}

/// Batches whose activations exceed the CPU's memory (here a 4 GB
/// address-space cap) are refused before the forward, naming the batch.
#[test]
fn batches_past_the_cpus_memory_are_refused_first() {
    let x = scratch_file("infer-cli", "big.npy");
    let side = 1024;
    npy::write(
        &x,
        &NpyArray::new(vec![16, 1, side, side], DType::F32, vec![0.5; 16 * side * side]),
    )
    .unwrap();
    let (model, config, y) = (
        fixture("model.safetensors"),
        fixture("config.json"),
        scratch_file("infer-cli", "big-y.npy"),
    );
    let out = Command::new("sh")
        .args([
            "-c",
            "ulimit -v 4000000; exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_fno"),
            "infer",
        ])
        .args([
            "--checkpoint",
            &model,
            "--config",
            &config,
            "--input",
            x.to_str().unwrap(),
        ])
        .args([
            "--output",
            y.to_str().unwrap(),
            "--backend",
            "cpu",
            "--batch-size",
            "16",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: inference in batches of 16 needs"),
        "{stderr}"
    );
    assert!(stderr.contains("GB on the CPU") && !y.exists(), "{stderr}");
    let _ = std::fs::remove_file(&x);
}

/// neuraloperator's own checkpoint files (made with neuraloperator 2.0 and
/// its main branch): a `save_checkpoint` state dict and a Trainer's save
/// directory reproduce PyTorch's CPU output with no `--config`, on the
/// Burn (CPU and wgpu) and Candle engines; a directory without a model is a
/// one-line error.
#[test]
fn neuralop_state_dicts_and_trainer_directories_need_no_config() {
    for (case, checkpoint, engine) in [
        ("dense2d", "darcy_fno_state_dict.pt", ["--backend", "cpu"]),
        ("dense2d", "darcy_fno_state_dict.pt", ["--engine", "candle"]),
        ("tucker2d_odd", "tfno_state_dict.pt", ["--backend", "wgpu"]),
        ("trainer1d", "", ["--backend", "cpu"]),
        // neuraloperator main's (its inverse shift) on a grid odd in its first dim.
        ("main2d_odd", "main_fno_state_dict.pt", ["--backend", "wgpu"]),
        ("main2d_odd", "main_fno_state_dict.pt", ["--engine", "candle"]),
    ] {
        let out = scratch_file("infer-cli", &format!("torch-{case}-{}.npy", engine[1]));
        let (path, x) = (torch(case, checkpoint), torch(case, "x.npy"));
        let mut args = vec!["--checkpoint", path.trim_end_matches('/'), "--input", &x];
        args.extend(["--output", out.to_str().unwrap()]);
        args.extend(engine);
        let run = infer(&args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{case} {engine:?}: {stderr}");
        // A directory says which of its models it took.
        assert_eq!(
            stderr.contains("best_model_state_dict.pt"),
            checkpoint.is_empty(),
            "{stderr}"
        );
        let (got, want) = (npy::read(&out).unwrap(), npy::read(torch(case, "y.npy")).unwrap());
        assert_eq!(got.shape, want.shape);
        let e = rel_l2(&got.data, &want.data);
        assert!(e <= 1e-4, "{case} {engine:?}: {e:e}");
    }
    // A truncated state dict and a directory without a model: one line each, nothing written.
    let truncated = scratch_file("infer-cli", "truncated_state_dict.pt");
    let bytes = std::fs::read(torch("dense2d", "darcy_fno_state_dict.pt")).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let empty = scratch_file("infer-cli", "empty-trainer-dir");
    std::fs::create_dir_all(&empty).unwrap();
    let x = torch("dense2d", "x.npy");
    for (checkpoint, says) in [
        (&truncated, "not a torch.save zip archive"),
        (&empty, "without best_model_state_dict.pt or model_state_dict.pt"),
    ] {
        let out = scratch_file("infer-cli", "never.npy");
        let args = ["--checkpoint", checkpoint.to_str().unwrap(), "--input", &x];
        let run = infer(&[&args[..], &["--output", out.to_str().unwrap()]].concat());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(checkpoint.to_str().unwrap()) && stderr.contains(says),
            "{stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!out.exists());
    }
}

/// A model neuraloperator trained on a GPU (fixtures/torch/gpu_trained2d,
/// gen_gpu_trained.py: Darcy 48², 40 epochs on an H100): `fno infer` on the
/// CPU, kernel path and reference path, scores the test error PyTorch's CPU
/// run of the files recorded (to 1e-4), and none worse than PyTorch's CUDA
/// runs at batches 8 and 1 (cuFFT's outputs vary with plan and batch, so those
/// compare by error, not value).
#[test]
fn a_gpu_trained_neuralop_model_scores_no_worse_than_on_the_gpu() {
    let case = "gpu_trained2d";
    let errors: serde_json::Value =
        serde_json::from_slice(&std::fs::read(torch(case, "errors.json")).unwrap()).unwrap();
    let recorded = |key: &str| errors[key].as_f64().unwrap_or_else(|| panic!("errors.json: no {key}"));
    let (checkpoint, x) = (torch(case, "gpu_fno_state_dict.pt"), torch(case, "x.npy"));
    let want = npy::read(torch(case, "y.npy")).unwrap();
    // The kernel path on every core, the reference path on one (`--threads`, named in the report).
    for (imp, threads) in [("unfused", None), ("reference", Some("1"))] {
        let out = scratch_file("infer-cli", &format!("gpu-trained-{imp}.npy"));
        let mut args = vec![
            "--checkpoint",
            &checkpoint,
            "--input",
            &x,
            "--output",
            out.to_str().unwrap(),
        ];
        args.extend(["--backend", "cpu", "--impl", imp]);
        args.extend(threads.map(|n| ["--threads", n]).into_iter().flatten());
        let run = infer(&args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{imp}: {stderr}");
        if threads.is_some() {
            assert!(stderr.contains("(cpu, 1 thread, Reference)"), "{stderr}");
        }
        let got = npy::read(&out).unwrap();
        assert_eq!(got.shape, want.shape);
        let samples = want.shape[0];
        let per_sample = want.data.len() / samples;
        let chunks = |v: &[f32]| v.chunks(per_sample).map(<[f32]>::to_vec).collect::<Vec<_>>();
        let error = chunks(&got.data)
            .iter()
            .zip(chunks(&want.data))
            .map(|(g, w)| rel_l2(g, &w))
            .sum::<f64>()
            / samples as f64;
        println!("{imp}: test error {error:.6}; recorded {errors}");
        let cpu = recorded("torch_cpu");
        assert!(
            (error - cpu).abs() <= 1e-4 * cpu,
            "{imp}: {error} against PyTorch's CPU {cpu}"
        );
        for key in ["torch_cuda_batch_8", "torch_cuda_batch_1"] {
            assert!(
                error <= recorded(key),
                "{imp}: {error} worse than {key} {}",
                recorded(key)
            );
        }
        assert!(error < 0.06, "{imp}: a trained model's error ({error}) is small");
    }
}

/// `--inverse-shift` reads a file with the other neuraloperator's shift (far
/// off on these odd grids), on every engine; an export under it says that
/// shift in its kwargs, so the export infers alike with no flag; a shift of
/// another name is a one-line error.
#[test]
fn inverse_shift_picks_the_other_neuraloperator() {
    let run_infer = |checkpoint: &str, x: &str, extra: &[&str], out: &std::path::Path| {
        let args = [
            "--checkpoint",
            checkpoint,
            "--input",
            x,
            "--output",
            out.to_str().unwrap(),
        ];
        let run = infer(&[&args[..], extra].concat());
        assert!(
            run.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        npy::read(out).unwrap().data
    };
    let cases = [
        ("main2d_odd", "main_fno", "fftshift", ["--backend", "cpu"]),
        ("main2d_odd", "main_fno", "fftshift", ["--engine", "candle"]),
        ("tucker2d_odd", "tfno", "ifftshift", ["--backend", "wgpu"]),
    ];
    for (case, name, other, engine) in cases {
        let (checkpoint, x) = (torch(case, &format!("{name}_state_dict.pt")), torch(case, "x.npy"));
        let want = npy::read(torch(case, "y.npy")).unwrap().data;
        let out = scratch_file("infer-cli", &format!("shift-{case}-{}.npy", engine[1]));
        let got = run_infer(
            &checkpoint,
            &x,
            &[&["--inverse-shift", other][..], &engine].concat(),
            &out,
        );
        let e = rel_l2(&got, &want);
        assert!(e > 1e-2, "{case} read with {other} is as near PyTorch ({e:e})");
        let dir = scratch_file("infer-cli", &format!("shift-export-{case}-{}", engine[1]));
        let _ = std::fs::remove_dir_all(&dir);
        let export = Command::new(env!("CARGO_BIN_EXE_fno"))
            .args([
                "export",
                &checkpoint,
                dir.to_str().unwrap(),
                "--format",
                "neuraloperator",
            ])
            .args(["--inverse-shift", other])
            .output()
            .unwrap();
        assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
        let exported = dir.join("model_state_dict.pt");
        let again = run_infer(exported.to_str().unwrap(), &x, &engine, &out);
        assert!(rel_l2(&again, &got) <= 1e-6, "{case}: the export lost {other}");
    }
    let x = torch("main2d_odd", "x.npy");
    let out = scratch_file("infer-cli", "shift-never.npy");
    let args = [
        "--checkpoint",
        &torch("main2d_odd", "main_fno_state_dict.pt"),
        "--input",
        &x,
    ];
    let run = infer(
        &[
            &args[..],
            &["--output", out.to_str().unwrap(), "--inverse-shift", "roll"],
        ]
        .concat(),
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("'roll'") && stderr.contains("fftshift, ifftshift"),
        "{stderr}"
    );
    assert!(!out.exists());
}

/// `fno export`: a neuraloperator state dict written back in neuraloperator's
/// format and as our safetensors, each of which `fno infer` runs to PyTorch's
/// output with no `--config`; files already there are kept unless
/// `--overwrite`; a bad name is a one-line error.
#[test]
fn exports_in_both_formats_infer_like_the_original() {
    let torch = |name: &str| torch("tucker2d_odd", name);
    let fno = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_fno")).args(args).output().unwrap();
    let (source, x) = (torch("tfno_state_dict.pt"), torch("x.npy"));
    let dir = scratch_file("infer-cli", "export");
    let _ = std::fs::remove_dir_all(&dir);
    let (neuralop, safetensors) = (dir.join("neuralop"), dir.join("model.safetensors"));
    for (format, out) in [("neuraloperator", &neuralop), ("safetensors", &safetensors)] {
        let export = [
            "export",
            &source,
            out.to_str().unwrap(),
            "--format",
            format,
            "--name",
            "tfno",
        ];
        let run = fno(&export);
        assert!(
            run.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let again = fno(&export);
        let stderr = String::from_utf8_lossy(&again.stderr);
        assert_eq!(again.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("exists; pass --overwrite"), "{stderr}");
    }
    let want = npy::read(torch("y.npy")).unwrap();
    for checkpoint in [neuralop.join("tfno_state_dict.pt"), safetensors] {
        let out = dir.join("y.npy");
        let run = infer(&[
            "--checkpoint",
            checkpoint.to_str().unwrap(),
            "--input",
            &x,
            "--output",
            out.to_str().unwrap(),
        ]);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        let e = rel_l2(&npy::read(&out).unwrap().data, &want.data);
        assert!(e <= 1e-5, "{}: {e:e}", checkpoint.display());
    }
    let run = fno(&[
        "export",
        &source,
        dir.to_str().unwrap(),
        "--format",
        "neuraloperator",
        "--name",
        "../up",
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--name \"../up\""), "{stderr}");
}
