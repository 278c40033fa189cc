//! End-to-end training on Autodiff<NdArray>: the loss falls and every file is
//! written; an interrupted run resumed from its checkpoint ends exactly where
//! the uninterrupted one does; bad configurations, data and checkpoints are
//! errors that name what is wrong.

use std::path::Path;

use burn::backend::{Autodiff, NdArray};
use fno_datasets::generate::{GenerateSpec, Pde};
use fno_kernels::fft::Planning;
use fno_models::checkpoint::SafeTensorsFile;
use fno_models::FnoConfig;
use fno_ops::{FaultTolerance, SpectralImpl};
use fno_testing::scratch_dir;
use fno_training::checkpoint::EpochMetrics;
use fno_training::config::DataSource;
use fno_training::config::DeviceCount;
use fno_training::data::DataProgress;
use fno_training::schedule::Schedule;
use fno_training::{
    train, train_data_parallel, PreparedData, Replicas, RunOptions, Start, TrainConfig, TrainError, TrainObserver,
};

type B = Autodiff<NdArray>;

struct Quiet;

impl TrainObserver for Quiet {
    fn batch(&mut self, _: usize, _: usize, _: usize, _: usize, loss: f64) {
        assert!(loss.is_finite());
    }
    fn epoch(&mut self, _: &EpochMetrics) {}
    fn message(&mut self, _: &str) {}
}

impl DataProgress for Quiet {
    fn generating(&mut self, _: &str, _: usize, _: usize) {}
    fn message(&mut self, _: &str) {}
}

fn generated(n: usize, res: usize, seed: u64) -> DataSource {
    DataSource {
        name: Some(format!("darcy{res}")),
        file: None,
        generate: Some(GenerateSpec {
            fine: Some(2 * res - 1),
            ..GenerateSpec::new(Pde::Darcy, n, res, seed)
        }),
        samples: None,
        stride: None,
        input_key: None,
        output_key: None,
    }
}

fn tiny(dir: &Path, epochs: usize) -> TrainConfig {
    let mut cfg = TrainConfig::darcy_default();
    cfg.model = FnoConfig {
        n_layers: 2,
        ..FnoConfig::new(&[6, 6], 1, 1, 8)
    };
    cfg.data.train = generated(48, 9, 0);
    cfg.data.tests = vec![generated(8, 9, 1), generated(4, 17, 2)];
    cfg.optim.epochs = epochs;
    cfg.optim.lr = 1e-2;
    cfg.run.out_dir = dir.join("run");
    cfg.run.plot_samples = 2;
    cfg
}

/// Burn seeds a backend-global generator, so runs in parallel test threads
/// would draw each other's initial weights, and burn-collective's peers of
/// one backend are the process's: one run at a time.
pub static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn run(cfg: &TrainConfig, start: Start, stop_after: Option<usize>) -> Result<fno_training::TrainSummary, TrainError> {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cfg.run.out_dir.parent().unwrap().join("cache");
    let data = PreparedData::prepare(cfg, &cache, &mut Quiet)?;
    let options = RunOptions {
        spectral_impl: SpectralImpl::Reference,
        fault_tolerance: FaultTolerance::Off,
        fft_planning: Planning::Rules,
        start,
        stop_after,
        init_from: None,
    };
    match cfg.run.devices {
        DeviceCount::Count(1) => train::<B>(cfg, &data, &options, &Default::default(), &mut Quiet),
        DeviceCount::Count(n) => {
            // Replicas in threads, sharing the CPU.
            let replicas = Replicas {
                devices: vec![Default::default(); n],
            };
            train_data_parallel::<B>(cfg, &data, &options, &replicas, &mut Quiet)
        }
        DeviceCount::All => unreachable!("the tests name counts"),
    }
}

#[test]
fn loss_falls_and_every_file_is_written() {
    let dir = scratch_dir("train-falls");
    let cfg = tiny(&dir, 8);
    let summary = run(&cfg, Start::Fresh, None).unwrap();
    let h = &summary.history;
    assert_eq!(h.len(), 8);
    assert!(h[7].train_loss < 0.6 * h[0].train_loss, "{h:?}");
    assert_eq!(h[7].tests.len(), 2);
    assert!(h[7].tests[0].l2 < h[0].tests[0].l2, "{h:?}");
    assert!(h[7]
        .tests
        .iter()
        .all(|t| t.l2.is_finite() && t.h1.is_finite() && t.l2_normalized.is_finite()));
    let lines = std::fs::read_to_string(&summary.metrics).unwrap();
    assert_eq!(lines.lines().count(), 8);
    let png = std::fs::read(summary.plot.unwrap()).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    let checkpoint = SafeTensorsFile::parse(&std::fs::read(&summary.last_checkpoint).unwrap()).unwrap();
    assert!(checkpoint.metadata.contains_key("training") && checkpoint.metadata.contains_key("config"));
    assert!(summary.best_checkpoint.unwrap().exists());
}

fn weights(path: &Path) -> Vec<(String, Vec<f32>)> {
    let file = SafeTensorsFile::parse(&std::fs::read(path).unwrap()).unwrap();
    file.tensors.into_iter().map(|(k, t)| (k, t.data)).collect()
}

/// Epoch losses, test errors and final weights of two runs agree to f32
/// rounding (NdArray's parallel reductions round differently run to run).
fn same_training(a: &fno_training::TrainSummary, b: &fno_training::TrainSummary, what: &str) {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-5 * x.abs().max(1e-3);
    assert_eq!(a.history.len(), b.history.len(), "{what}");
    for (x, y) in a.history.iter().zip(&b.history) {
        assert!(
            close(x.train_loss, y.train_loss),
            "{what}, epoch {}: {x:?} vs {y:?}",
            x.epoch
        );
        assert!(close(x.lr, y.lr), "{what}, epoch {}: {x:?} vs {y:?}", x.epoch);
        assert_eq!(x.tests.len(), y.tests.len(), "{what}");
        for (s, t) in x.tests.iter().zip(&y.tests) {
            assert!(
                close(s.l2, t.l2) && close(s.h1, t.h1),
                "{what}, epoch {}: {s:?} vs {t:?}",
                x.epoch
            );
        }
    }
    let (wa, wb) = (weights(&a.last_checkpoint), weights(&b.last_checkpoint));
    assert_eq!(wa.len(), wb.len());
    for ((name, x), (_, y)) in wa.iter().zip(&wb) {
        let scale = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = x.iter().zip(y).fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        assert!(worst <= 1e-5 * scale, "{what}: {name}: {worst} of {scale}");
    }
}

#[test]
fn replicas_train_as_one_device_and_resume_on_another_count() {
    // 48 samples in batches of 9: the last batch (3 samples) leaves one of
    // four replicas none; a plateau schedule steps on the root's test error.
    let config = |name: &str, devices: usize| {
        let mut cfg = tiny(&scratch_dir(&format!("train-{name}")), 3);
        cfg.optim.batch_size = 9;
        cfg.optim.schedule = Schedule::Plateau {
            factor: 0.5,
            patience: 0,
            threshold: 0.3,
            min_lr: 0.0,
        };
        cfg.run.devices = DeviceCount::Count(devices);
        cfg
    };
    let one = run(&config("one-device", 1), Start::Fresh, None).unwrap();
    assert!(
        one.history.windows(2).any(|w| w[1].lr < w[0].lr),
        "the schedule never stepped down: {:?}",
        one.history
    );
    for devices in [2, 4] {
        let cfg = config(&format!("replicas-{devices}"), devices);
        let replicas = run(&cfg, Start::Fresh, None).unwrap();
        same_training(&one, &replicas, &format!("{devices} replicas"));
        let lines = std::fs::read_to_string(&replicas.metrics).unwrap();
        assert_eq!(lines.lines().count(), 3, "one replica writes: {lines}");
    }
    // Stopped on three replicas, resumed on two.
    let mut cfg = config("resumed-elsewhere", 3);
    let first = run(&cfg, Start::Fresh, Some(1)).unwrap();
    assert_eq!(first.history.len(), 1);
    cfg.run.devices = DeviceCount::Count(2);
    let resumed = run(&cfg, Start::Resume, None).unwrap();
    same_training(&one, &resumed, "3 replicas, then 2");
    // Without the exchange a replica would fit its own shard: the checks see it.
    let mut alone = config("one-shard", 1);
    alone.data.train.samples = Some(24);
    let apart = run(&alone, Start::Fresh, None).unwrap();
    let (wa, wb) = (weights(&one.last_checkpoint), weights(&apart.last_checkpoint));
    let moved = wa
        .iter()
        .zip(&wb)
        .flat_map(|((_, x), (_, y))| x.iter().zip(y).map(|(a, b)| (a - b).abs()))
        .fold(0f32, f32::max);
    assert!(moved > 1e-3, "half the data trained to the same weights ({moved})");
}

#[test]
fn a_resumed_run_ends_where_the_uninterrupted_one_does() {
    let straight = tiny(&scratch_dir("train-straight"), 3);
    let a = run(&straight, Start::Fresh, None).unwrap();
    let interrupted = tiny(&scratch_dir("train-interrupted"), 3);
    let first = run(&interrupted, Start::Fresh, Some(1)).unwrap();
    assert_eq!(first.history.len(), 1);
    let b = run(&interrupted, Start::Resume, None).unwrap();
    assert_eq!(b.history.len(), 3);
    // A lost optimiser state or a different batch order moves the weights by ~1e-2.
    same_training(&a, &b, "resumed");
    // A resumed run must be the same experiment.
    let mut changed = interrupted.clone();
    changed.optim.lr = 2e-2;
    changed.optim.epochs = 4;
    let err = run(&changed, Start::Resume, None).unwrap_err().to_string();
    assert!(err.contains("different configuration"), "{err}");
    // A fresh run does not mix its files with a finished one; overwriting
    // starts again with only its own epochs on record.
    let err = run(&interrupted, Start::Fresh, None).unwrap_err().to_string();
    assert!(
        err.contains("finished run (3 epochs)") && err.contains("--overwrite"),
        "{err}"
    );
    let mut shorter = interrupted.clone();
    shorter.optim.epochs = 1;
    let again = run(&shorter, Start::Overwrite, None).unwrap();
    assert_eq!(again.history.len(), 1);
    let metrics = std::fs::read_to_string(&again.metrics).unwrap();
    assert_eq!(metrics.lines().count(), 1, "{metrics}");
    let err = run(&tiny(&scratch_dir("train-never-ran"), 1), Start::Resume, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("nothing to resume") && err.contains("last.state"), "{err}");
}

/// A TFNO (Tucker rank 0.5) learns, saves tltorch's factors rather than a
/// dense weight, and resumes to where the uninterrupted run ends.
#[test]
fn factorized_models_train_save_their_factors_and_resume() {
    let tucker = |dir: &Path, epochs: usize| {
        let mut cfg = tiny(dir, epochs);
        cfg.model.factorization = Some("tucker".into());
        cfg.model.rank = fno_models::Rank::Fraction(0.5);
        cfg
    };
    let a = run(&tucker(&scratch_dir("train-tucker"), 6), Start::Fresh, None).unwrap();
    let h = &a.history;
    assert!(h[5].train_loss < 0.85 * h[0].train_loss, "{h:?}");
    assert!(h[5].tests[0].l2 < h[0].tests[0].l2, "{h:?}");
    let file = SafeTensorsFile::parse(&std::fs::read(&a.last_checkpoint).unwrap()).unwrap();
    // (8, 8, 6, 4) at rank 0.5: tensorly's ranks.
    let core = &file.tensors["fno_blocks.convs.0.weight.core"];
    assert_eq!(core.shape, vec![6, 6, 5, 3, 2]);
    assert_eq!(
        file.tensors["fno_blocks.convs.1.weight.factors.factor_2"].shape,
        vec![6, 5, 2]
    );
    assert!(!file.tensors.keys().any(|k| k.ends_with(".weight.tensor")));

    let straight = run(&tucker(&scratch_dir("train-tucker-straight"), 3), Start::Fresh, None).unwrap();
    let interrupted = tucker(&scratch_dir("train-tucker-interrupted"), 3);
    run(&interrupted, Start::Fresh, Some(1)).unwrap();
    let resumed = run(&interrupted, Start::Resume, None).unwrap();
    same_training(&straight, &resumed, "tucker resumed");
}

#[test]
fn partial_tables_take_defaults_and_factorized_models_name_bad_ranks() {
    let dir = scratch_dir("train-partial");
    let path = dir.join("partial.toml");
    let model = "[model]\nn_modes = [4, 4]\nin_channels = 1\nout_channels = 1\nhidden_channels = 6\n";
    let data = "[data.train]\nfile = \"a.npz\"\n[[data.tests]]\nfile = \"b.npz\"\n";
    std::fs::write(&path, format!("{model}{data}[optim]\nepochs = 2\n[run]\nseed = 7\n")).unwrap();
    let cfg = TrainConfig::from_file(&path).unwrap();
    let defaults = TrainConfig::darcy_default();
    assert_eq!(cfg.optim.epochs, 2);
    assert_eq!(cfg.run.seed, 7);
    assert_eq!(
        (cfg.optim.batch_size, cfg.optim.lr),
        (defaults.optim.batch_size, defaults.optim.lr)
    );
    assert_eq!(cfg.optim.schedule, defaults.optim.schedule);
    assert_eq!(cfg.run.out_dir, defaults.run.out_dir);
    for extra in [
        "factorization = \"tucker\"\nrank = 0.42\n",
        "factorization = \"cp\"\nrank = 3\n",
        "factorization = \"tt\"\nrank = [1, 2, 2, 2, 1]\n",
        "separable = true\n",
        "factorization = \"dense\"\n",
    ] {
        std::fs::write(&path, format!("{model}{extra}{data}")).unwrap();
        TrainConfig::from_file(&path).unwrap_or_else(|e| panic!("{extra}: {e}"));
    }
    for (extra, named) in [
        ("factorization = \"tucker\"\nrank = [2, 2]\n", "rank [2, 2]"),
        ("factorization = \"tt\"\nrank = [2, 2, 2, 2, 2]\n", "rank"),
        ("factorization = \"cp\"\nrank = 0.001\n", "too small"),
        ("factorization = \"tucker\"\nrank = -0.5\n", "rank = -0.5"),
    ] {
        std::fs::write(&path, format!("{model}{extra}{data}")).unwrap();
        let err = TrainConfig::from_file(&path).unwrap_err().to_string();
        assert!(err.contains(named), "{extra}: {err}");
    }
}

#[test]
fn bad_configurations_data_and_checkpoints_are_named() {
    let dir = scratch_dir("train-bad");
    let path = dir.join("bad.toml");
    let base = tiny(&dir, 1).to_toml();
    for (text, expected) in [
        (base.replace("[optim]", "[optim]\nlearning_rate = 1.0"), "learning_rate"),
        (base.replace("batch_size = 8", "batch_size = 0"), "batch_size"),
        ("[model\n".to_string(), "bad.toml"),
        (base.replace("kind = \"step\"", "kind = \"sometimes\""), "sometimes"),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = TrainConfig::from_file(&path).unwrap_err().to_string();
        assert!(err.contains(expected) && err.contains("bad.toml"), "{expected}: {err}");
    }
    let mut missing = tiny(&dir, 1);
    missing.data.train = DataSource {
        file: Some(dir.join("absent.pt")),
        generate: None,
        ..generated(1, 9, 0)
    };
    let err = run(&missing, Start::Fresh, None).unwrap_err().to_string();
    assert!(err.contains("absent.pt"), "{err}");
    let mut wrong_channels = tiny(&dir, 1);
    wrong_channels.model.in_channels = 3;
    let err = run(&wrong_channels, Start::Fresh, None).unwrap_err().to_string();
    assert!(err.contains("3 input"), "{err}");
    let cfg = tiny(&dir, 1);
    std::fs::create_dir_all(&cfg.run.out_dir).unwrap();
    std::fs::write(cfg.run.out_dir.join("last.state"), b"FNOSTAT2 truncated").unwrap();
    let err = run(&cfg, Start::Resume, None).unwrap_err().to_string();
    assert!(err.contains("last.state") && err.contains("truncated"), "{err}");
    std::fs::write(cfg.run.out_dir.join("last.state"), b"FNOSTAT1 an earlier layout").unwrap();
    let err = run(&cfg, Start::Resume, None).unwrap_err().to_string();
    assert!(err.contains("last.state") && err.contains("earlier fno"), "{err}");
}

#[test]
fn the_example_configurations_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let cfg = TrainConfig::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(cfg.optim.epochs > 0);
            seen += 1;
        }
    }
    assert_eq!(seen, 4);
}
