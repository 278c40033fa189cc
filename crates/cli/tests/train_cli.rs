//! `fno train`, `fno eval` and `fno infer` end to end on the CPU: a tiny run
//! that stops, resumes and finishes, prints where its files went, and whose
//! checkpoint `fno eval` scores on a freshly generated file, where `fno infer`
//! returns the very predictions eval scored; a finished run is not trained
//! over; bad configurations and checkpoints are one-line errors; a run on wgpu
//! reports its device memory each epoch.

use std::path::PathBuf;
use std::process::{Command, Output};

use fno_datasets::npy;
use fno_testing::scratch_dir;

fn fno(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fno")).args(args).output().unwrap()
}

const TINY: &str = r#"
[model]
n_modes = [4, 4]
in_channels = 1
out_channels = 1
hidden_channels = 6
n_layers = 2

[data.train]
generate = { pde = "darcy", n = 16, res = 9, seed = 0, fine = 17 }

[[data.tests]]
name = "small"
generate = { pde = "darcy", n = 4, res = 9, seed = 1, fine = 17 }

[optim]
epochs = 3
batch_size = 4
lr = 1e-2
weight_decay = 1e-4
eps = 1e-6
loss = "h1"
schedule = { kind = "step", step_size = 1, gamma = 0.5 }

[run]
out_dir = "set-by---out"
seed = 1
eval_every = 1
checkpoint_every = 1
plot_samples = 1
"#;

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn train_stops_resumes_and_eval_scores_the_checkpoint() {
    let dir = scratch_dir("train-cli-run");
    let config = dir.join("tiny.toml");
    std::fs::write(&config, TINY).unwrap();
    let cfg = config.to_str().unwrap();
    let run = dir.join("runs/tiny");
    let out_dir = run.to_str().unwrap();
    let train =
        |extra: &[&str]| fno(&[&["train", "--config", cfg, "--out", out_dir, "--backend", "cpu"], extra].concat());
    let first = train(&["--stop-after", "1"]);
    let (_, err) = text(&first);
    assert!(first.status.success(), "{err}");
    assert!(err.contains("generating") && err.contains("epoch   1"), "{err}");
    let second = train(&["--resume"]);
    let (out, err) = text(&second);
    assert!(second.status.success(), "{err}");
    assert!(
        err.contains("resuming") && err.contains("epoch   3") && !err.contains("epoch   1 "),
        "{err}"
    );
    let checkpoint = run.join("last.safetensors");
    for (label, file) in [
        ("checkpoint", "last.safetensors"),
        ("metrics", "metrics.jsonl"),
        ("predictions plot", "predictions.png"),
    ] {
        let line = format!("{label}: {}", run.join(file).display());
        assert!(out.contains(&line) && run.join(file).exists(), "{line} in {out}");
    }
    assert_eq!(
        std::fs::read_to_string(run.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .count(),
        3
    );
    assert!(
        dir.join("runs/cache").is_dir(),
        "generated data are cached beside the run"
    );

    let data = dir.join("held_out.safetensors");
    let generated = fno(&[
        "data",
        "generate",
        "darcy",
        "--n",
        "3",
        "--res",
        "9",
        "--fine",
        "17",
        "--seed",
        "9",
        "--out",
        data.to_str().unwrap(),
    ]);
    assert!(generated.status.success());
    let scored = dir.join("scored.npy");
    let eval = fno(&[
        "eval",
        "--checkpoint",
        checkpoint.to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--backend",
        "cpu",
        "--predictions",
        scored.to_str().unwrap(),
    ]);
    let (out, err) = text(&eval);
    assert!(eval.status.success(), "{err}");
    let l2: f64 = out
        .split("relative L2 ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(l2 > 0.0 && l2 < 1.0, "{out}");

    // `fno infer` on the same inputs returns the de-normalised predictions
    // `fno eval` scored.
    let infer_to = |output: &std::path::Path, engine: &[&str]| {
        let mut args = vec!["infer", "--checkpoint", checkpoint.to_str().unwrap()];
        args.extend(["--input", data.to_str().unwrap(), "--output", output.to_str().unwrap()]);
        args.extend(engine);
        fno(&args)
    };
    let inferred = dir.join("inferred.npy");
    let infer = infer_to(&inferred, &["--backend", "cpu"]);
    let (_, err) = text(&infer);
    assert!(infer.status.success(), "{err}");
    assert!(err.contains("de-normalised"), "{err}");
    let scored = npy::read(&scored).unwrap();
    let inferred = npy::read(&inferred).unwrap();
    assert_eq!(inferred.shape, vec![3, 1, 9, 9]);
    assert_eq!(inferred.shape, scored.shape);
    let worst = inferred
        .data
        .iter()
        .zip(&scored.data)
        .fold(0f32, |m, (a, b)| m.max((a - b).abs() / b.abs().max(1e-3)));
    assert!(worst <= 1e-5, "infer and eval differ by {worst:e}");
    // Their error against the truth is the L2 eval printed (per sample, averaged).
    let truth = fno_datasets::load(&data, &Default::default()).unwrap().outputs;
    let per_sample = truth.sample_len();
    let mean_l2: f64 = (0..3)
        .map(|i| {
            let (p, t) = (
                &inferred.data[i * per_sample..][..per_sample],
                &truth.data[i * per_sample..][..per_sample],
            );
            let diff: f64 = p.iter().zip(t).map(|(&p, &t)| (p as f64 - t as f64).powi(2)).sum();
            let norm: f64 = t.iter().map(|&t| (t as f64).powi(2)).sum();
            (diff / norm).sqrt()
        })
        .sum::<f64>()
        / 3.0;
    assert!(
        (mean_l2 - l2).abs() <= 1e-4 * l2 + 1e-5,
        "infer's L2 {mean_l2} vs eval's {l2}"
    );
    // The Candle engine loads the same checkpoint, normalisers included.
    let by_candle = dir.join("inferred-candle.npy");
    let candle = infer_to(&by_candle, &["--engine", "candle", "--batch-size", "2"]);
    let (_, err) = text(&candle);
    assert!(candle.status.success(), "{err}");
    assert!(err.contains("Candle") && err.contains("de-normalised"), "{err}");
    let by_candle = npy::read(&by_candle).unwrap();
    assert_eq!(by_candle.shape, inferred.shape);
    let e = fno_testing::relative_l2_f32(&by_candle.data, &inferred.data);
    assert!(e <= 1e-5, "Candle and Burn differ by {e:e}");

    // A fresh run does not train into a finished one's directory.
    let again = train(&[]);
    let (_, err) = text(&again);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("finished run") && err.contains("--overwrite"), "{err}");
}

/// The weights of a checkpoint, tensor by tensor.
fn weights(path: &std::path::Path) -> Vec<(String, Vec<f32>)> {
    let file = fno_models::checkpoint::SafeTensorsFile::parse(&std::fs::read(path).unwrap()).unwrap();
    file.tensors.into_iter().map(|(k, t)| (k, t.data)).collect()
}

/// `--devices 3` (replicas sharing the CPU) trains to the weights one device
/// reaches, to f32 rounding; bad device counts are one-line errors.
#[test]
fn data_parallel_training_reaches_one_devices_weights() {
    let dir = scratch_dir("train-cli-replicas");
    let config = dir.join("tiny.toml");
    std::fs::write(&config, TINY).unwrap();
    let cfg = config.to_str().unwrap();
    let train = |name: &str, extra: &[&str]| {
        let out_dir = dir.join(name);
        let out = fno(&[
            &[
                "train",
                "--config",
                cfg,
                "--out",
                out_dir.to_str().unwrap(),
                "--backend",
                "cpu",
            ],
            extra,
        ]
        .concat());
        (out, out_dir.join("last.safetensors"))
    };
    let (one, one_weights) = train("one", &[]);
    assert!(one.status.success(), "{}", text(&one).1);
    let (three, three_weights) = train("three", &["--devices", "3"]);
    let (_, err) = text(&three);
    assert!(three.status.success(), "{err}");
    assert!(
        err.contains("data-parallel: 3 replicas, each taking up to 2 samples of every batch of 4"),
        "{err}"
    );
    let (a, b) = (weights(&one_weights), weights(&three_weights));
    assert_eq!(a.len(), b.len());
    for ((name, x), (_, y)) in a.iter().zip(&b) {
        let scale = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = x.iter().zip(y).fold(0f32, |m, (p, q)| m.max((p - q).abs()));
        assert!(worst <= 1e-5 * scale, "{name}: {worst} of {scale}");
    }
    for (devices, says) in [("0", "devices must be positive"), ("two", "a device count or \"all\"")] {
        let (out, _) = train("bad", &["--devices", devices]);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says), "--devices {devices}: {err}");
    }
    std::fs::write(
        &config,
        TINY.replace("plot_samples = 1", "plot_samples = 1\ndevices = -1"),
    )
    .unwrap();
    let (out, _) = train("bad", &[]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("tiny.toml") && err.contains("devices"), "{err}");
}

#[test]
fn bad_configurations_and_checkpoints_are_one_line_errors() {
    let dir = scratch_dir("train-cli-bad");
    let config = dir.join("bad.toml");
    std::fs::write(&config, TINY.replace("n_layers = 2", "n_layers = 2\nlayers = 3")).unwrap();
    let out = fno(&["train", "--config", config.to_str().unwrap(), "--backend", "cpu"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("bad.toml") && err.contains("layers"),
        "{err}"
    );
    std::fs::write(&config, TINY).unwrap();
    let out = fno(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--backend",
        "cpu",
        "--fft-planning",
        "fastest",
    ]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("invalid value 'fastest'") && err.contains("rules, measured"),
        "{err}"
    );
    std::fs::write(
        &config,
        TINY.replace(
            "n_layers = 2",
            "n_layers = 2\nfactorization = \"tucker\"\nrank = [3, 3]",
        ),
    )
    .unwrap();
    let out = fno(&["train", "--config", config.to_str().unwrap(), "--backend", "cpu"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("rank [3, 3]") && err.contains("Tucker"), "{err}");
    std::fs::write(
        &config,
        TINY.replace("plot_samples = 1", "plot_samples = 1\nmatmul_precision = \"fp16\""),
    )
    .unwrap();
    let out = fno(&["train", "--config", config.to_str().unwrap(), "--backend", "cpu"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("fp16") && err.contains("f32") && err.contains("tf32"),
        "{err}"
    );
    std::fs::write(
        &config,
        TINY.replace("n_layers = 2", "n_layers = 2\nfno_block_precision = \"quarter\""),
    )
    .unwrap();
    let out = fno(&["train", "--config", config.to_str().unwrap(), "--backend", "cpu"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("quarter") && err.contains("\"mixed\""), "{err}");
    // The block precision is the model's alone: the old run key says where it went.
    std::fs::write(&config, TINY.replace("[run]\n", "[run]\nprecision = \"half\"\n")).unwrap();
    let out = fno(&["train", "--config", config.to_str().unwrap(), "--backend", "cpu"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("fno_block_precision = \"half\" under [model]"), "{err}");
    std::fs::write(&config, TINY).unwrap();
    let nowhere = dir.join("never-trained");
    let out = fno(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        nowhere.to_str().unwrap(),
        "--resume",
        "--backend",
        "cpu",
    ]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nothing to resume"), "{err}");
    let not_trained = dir.join("plain.safetensors");
    std::fs::write(&not_trained, b"\x02\x00\x00\x00\x00\x00\x00\x00{}").unwrap();
    let out = fno(&[
        "eval",
        "--checkpoint",
        not_trained.to_str().unwrap(),
        "--data",
        "x.npz",
        "--backend",
        "cpu",
    ]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a checkpoint of `fno train`"), "{err}");
}

/// On wgpu (lavapipe in CI) the run trains through the kernel paths, and each
/// epoch reports the device memory: live tensors within what the pools hold.
/// TF32, asked for on a device without it, is said to run in f32; the
/// spectral blocks run in mixed precision, checked by checksums (no fault
/// on a fault-free run).
#[test]
fn a_wgpu_run_reports_device_memory_each_epoch() {
    let dir = scratch_dir("train-cli-wgpu");
    let config = dir.join("tiny.toml");
    std::fs::write(&config, TINY.replace("epochs = 3", "epochs = 1")).unwrap();
    let run = dir.join("run");
    let out = fno(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
        "--backend",
        "wgpu",
        "--matmul-precision",
        "tf32",
        "--precision",
        "mixed",
        "--fault-tolerance",
        "detect",
    ]);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("mixed spectral blocks"), "{err}");
    assert!(
        err.contains("fault tolerance (Detect): 0 detected, 0 corrected"),
        "{err}"
    );
    assert!(err.contains(" MiB"), "no memory on the epoch line: {err}");
    assert!(
        err.contains("Tf32 1×1 products") && err.contains("no TF32 tensor cores: the 1×1 convolutions run in f32"),
        "{err}"
    );
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(metrics.lines().next().unwrap()).unwrap();
    let (in_use, reserved) = (
        line["memory"]["in_use_mib"].as_f64().unwrap(),
        line["memory"]["reserved_mib"].as_f64().unwrap(),
    );
    assert!(in_use > 0.0 && reserved >= in_use, "{line}");
}

/// A 1-D run whose activations (4 MiB) outgrow the shared small pages.
const WIDE: &str = r#"
[model]
n_modes = [16]
in_channels = 1
out_channels = 1
hidden_channels = 64
n_layers = 2

[data.train]
generate = { pde = "burgers", n = 16, res = 2048, seed = 0, fine = 2048 }

[[data.tests]]
name = "small"
generate = { pde = "burgers", n = 4, res = 2048, seed = 1, fine = 2048 }

[optim]
epochs = 1
batch_size = 8
lr = 1e-3
weight_decay = 1e-4
eps = 1e-6

[run]
out_dir = "set-by---out"
plot_samples = 0
"#;

/// Trains `config` on wgpu (unfused) in memory mode `mode` into `dir/mode`:
/// the run's directory and stderr.
fn train_on_wgpu(dir: &std::path::Path, config: &std::path::Path, mode: &str) -> (PathBuf, String) {
    let run = dir.join(mode);
    let out = fno(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
        "--backend",
        "wgpu",
        "--impl",
        "unfused",
        "--memory",
        mode,
    ]);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{mode}: {err}");
    (run, err)
}

/// The epoch's memory figures of a run's metrics: (peak in use, peak held, end held).
fn memory_of(run: &std::path::Path) -> (f64, f64, f64) {
    let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
    let figure = |key: &str| {
        line["memory"][key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {line}"))
    };
    (
        figure("peak_in_use_mib"),
        figure("peak_reserved_mib"),
        figure("reserved_mib"),
    )
}

/// `--memory` on wgpu (lavapipe in CI; the pool code is CUDA's too): both
/// modes hold the same live tensors at their peak, the balanced pools hold
/// less than CubeCL's and little more than the tensors, and hand pages back
/// by the epoch's end; an unknown mode is a one-line error.
#[test]
fn the_balanced_memory_mode_holds_less_than_the_fast_one() {
    let dir = scratch_dir("train-cli-memory");
    let config = dir.join("wide.toml");
    std::fs::write(&config, WIDE).unwrap();
    let mut figures = Vec::new();
    for mode in ["fast", "balanced"] {
        let (run, err) = train_on_wgpu(&dir, &config, mode);
        assert!(err.contains("GPU MiB peak"), "{mode}: {err}");
        figures.push(memory_of(&run));
    }
    let [(fast_use, fast_held, _), (use_, held, end_held)] = figures[..] else {
        unreachable!()
    };
    eprintln!(
        "fast: peak {fast_use:.1} in use, {fast_held:.1} held; balanced: {use_:.1}, {held:.1}, end {end_held:.1}"
    );
    assert!((use_ - fast_use).abs() <= 0.02 * fast_use, "same tensors: {figures:?}");
    assert!(held < fast_held, "balanced holds less: {figures:?}");
    assert!(held <= 1.5 * use_ + 16.0, "pages fitted to the tensors: {figures:?}");
    assert!(end_held < held, "pages handed back: {figures:?}");

    let out = fno(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--memory",
        "tiny",
        "--backend",
        "wgpu",
    ]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("unknown memory mode 'tiny' (expected one of fast, balanced, small)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    std::fs::write(
        &config,
        WIDE.replace("plot_samples = 0", "plot_samples = 0\nmemory = \"tiny\""),
    )
    .unwrap();
    let out = fno(&["train", "--config", config.to_str().unwrap(), "--backend", "wgpu"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown memory mode 'tiny'"), "{err}");
}

/// `--memory small` on wgpu (lavapipe in CI): the blocks rerun in the
/// backward pass train the same model as `balanced` with fewer live bytes at
/// the peak; with dropout, whose masks a rerun would change, it is refused.
#[test]
fn the_small_memory_mode_trains_alike_with_fewer_live_bytes() {
    let dir = scratch_dir("train-cli-memory-small");
    let config = dir.join("deep.toml");
    std::fs::write(&config, WIDE.replace("n_layers = 2", "n_layers = 4")).unwrap();
    let mut runs = Vec::new();
    for mode in ["balanced", "small"] {
        let (run, _) = train_on_wgpu(&dir, &config, mode);
        let metrics = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
        let line: serde_json::Value = serde_json::from_str(metrics.lines().last().unwrap()).unwrap();
        let losses = [
            line["train_loss"].as_f64().unwrap(),
            line["tests"][0]["l2"].as_f64().unwrap(),
        ];
        runs.push((losses, memory_of(&run).0));
    }
    let [(balanced, balanced_use), (small, small_use)] = runs[..] else {
        unreachable!()
    };
    eprintln!("balanced: losses {balanced:?}, peak {balanced_use:.1} MiB in use; small: {small:?}, {small_use:.1}");
    for (b, s) in balanced.iter().zip(&small) {
        assert!(
            (b - s).abs() <= 1e-4 * b.abs(),
            "the same training: {balanced:?} vs {small:?}"
        );
    }
    assert!(
        small_use <= 0.8 * balanced_use,
        "fewer live bytes: {small_use} vs {balanced_use} MiB"
    );

    std::fs::write(
        &config,
        WIDE.replace("n_layers = 2", "n_layers = 2\nchannel_mlp_dropout = 0.1")
            .replace("plot_samples = 0", "plot_samples = 0\nmemory = \"small\""),
    )
    .unwrap();
    let out = fno(&["train", "--config", config.to_str().unwrap(), "--backend", "wgpu"]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("channel_mlp_dropout = 0"), "{err}");
}

/// `--precision half` on wgpu (lavapipe in CI): every activation an f16
/// tensor, f32 weights and sums, a dynamic loss scale. Its epochs' losses
/// track `--precision mixed` (f32 activations) to within f16's reach, and
/// differ from them (the activations were rounded). On Burn's fusion backend,
/// whose ops refuse operands of two dtypes where CubeBackend's do not.
#[test]
fn half_precision_training_tracks_mixed_on_wgpu() {
    let dir = scratch_dir("train-cli-half");
    let config = dir.join("tiny.toml");
    std::fs::write(&config, TINY).unwrap();
    let losses = |precision: &str| -> Vec<f64> {
        let run = dir.join(precision);
        let out = fno(&[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--out",
            run.to_str().unwrap(),
            "--backend",
            "wgpu",
            "--burn-fusion",
            "on",
            "--precision",
            precision,
        ]);
        let (_, err) = text(&out);
        assert!(out.status.success(), "{precision}: {err}");
        assert!(err.contains(&format!("{precision} spectral blocks")), "{err}");
        std::fs::read_to_string(run.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["train_loss"]
                    .as_f64()
                    .unwrap()
            })
            .collect()
    };
    let (half, mixed) = (losses("half"), losses("mixed"));
    assert_eq!(half.len(), 3);
    let gaps: Vec<f64> = half.iter().zip(&mixed).map(|(h, m)| (h - m).abs() / m.abs()).collect();
    assert!(half.iter().all(|l| l.is_finite()), "{half:?}");
    assert!(gaps.iter().all(|&g| g < 1e-2), "half {half:?} vs mixed {mixed:?}");
    assert!(
        gaps.iter().any(|&g| g > 0.0),
        "half {half:?} equals mixed: nothing was rounded"
    );
}

/// `fno train --init-from` a neuraloperator state dict: the architecture is
/// the checkpoint's (the configuration's [model] replaced), the weights its
/// own (after one step at a negligible learning rate, the run's checkpoint
/// still gives PyTorch's output on the fixture's input); it cannot be
/// combined with --resume.
#[test]
fn init_from_fine_tunes_a_neuraloperator_checkpoint() {
    let fixture = |name: &str| {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../models/tests/fixtures/torch/dense2d")
            .join(name)
            .to_string_lossy()
            .into_owned()
    };
    let dir = scratch_dir("train-cli-init-from");
    let config = dir.join("tiny.toml");
    let still = TINY
        .replace("lr = 1e-2", "lr = 1e-12")
        .replace("weight_decay = 1e-4", "weight_decay = 0.0")
        .replace("epochs = 3", "epochs = 1")
        .replace("batch_size = 4", "batch_size = 16")
        .replace(
            "[data.train]",
            "[data]\nencode_input = false\nencode_output = false\n\n[data.train]",
        );
    std::fs::write(&config, still).unwrap();
    let run = dir.join("run");
    let checkpoint = fixture("darcy_fno_state_dict.pt");
    let out = fno(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
        "--backend",
        "cpu",
        "--init-from",
        &checkpoint,
    ]);
    let (_, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("starting from the weights of"), "{err}");
    let y = dir.join("y.npy");
    let last = run.join("last.safetensors");
    let (x, want) = (fixture("x.npy"), fixture("y.npy"));
    let out = fno(&[
        "infer",
        "--checkpoint",
        last.to_str().unwrap(),
        "--input",
        &x,
        "--output",
        y.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out).1);
    let (got, want) = (npy::read(&y).unwrap(), npy::read(want).unwrap());
    let num: f64 = got
        .data
        .iter()
        .zip(&want.data)
        .map(|(g, w)| (*g as f64 - *w as f64).powi(2))
        .sum();
    let den: f64 = want.data.iter().map(|w| (*w as f64).powi(2)).sum();
    assert!(
        (num / den).sqrt() <= 1e-5,
        "the fixture's weights: {:e}",
        (num / den).sqrt()
    );

    let out = fno(&[
        "train",
        "--config",
        config.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
        "--resume",
        "--init-from",
        &checkpoint,
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("--init-from"), "{}", text(&out).1);
}
