//! The Candle FNO against PyTorch and the Burn model: every neuraloperator 2.0
//! configuration of the model crate's fixtures (dense, factorized and
//! separable weights, each skip, norm, padding, pre-activation, 1D–3D) and the
//! shared Darcy checkpoint; our checkpoints written by the Candle model load
//! in the Burn model to the same outputs; a fresh model trains with
//! candle-nn's AdamW and its gradients match finite differences.

use std::path::{Path, PathBuf};

use burn::backend::NdArray;
use candle_core::{DType, Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use fno_models::FnoConfig;
use fno_testing::{fresh_seed, relative_l2, relative_l2_f32, uniform};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/tests/fixtures")
}

fn fixture(case: &str) -> PathBuf {
    fixtures_dir().join(case)
}

/// Every model fixture: a directory with a checkpoint and PyTorch's output.
fn fixtures() -> Vec<String> {
    let mut cases: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("model.safetensors").exists() && p.join("y.npy").exists())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    // neuraloperator's configurations and our TFNO exports (models/tests/neuralop_configurations.rs).
    assert_eq!(cases.len(), 12, "{cases:?}");
    cases
}

fn shared_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/neuralop/fno2d_small")
}

/// The Candle model of `dir`'s checkpoint on `x.npy`, in `dtype`, as f32 values.
fn candle_output(dir: &Path, checkpoint: &str, dtype: DType) -> (Vec<f32>, fno_candle::Fno) {
    let bytes = std::fs::read(dir.join(checkpoint)).unwrap();
    let config = std::fs::read_to_string(dir.join("config.json")).ok();
    let config = config.map(|c| FnoConfig::from_json(&c).unwrap());
    let model = fno_candle::Fno::load(&bytes, config.as_ref(), dtype, &Device::Cpu)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let x = fno_datasets::npy::read(dir.join("x.npy")).unwrap();
    let x = Tensor::from_vec(x.data, x.shape, &Device::Cpu)
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    let y = model.forward(&x, false).unwrap();
    let y = y
        .to_dtype(DType::F32)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    (y, model)
}

fn pytorch_output(dir: &Path) -> Vec<f32> {
    fno_datasets::npy::read(dir.join("y.npy")).unwrap().data
}

#[test]
fn every_fixture_reproduces_pytorch() {
    for case in fixtures() {
        let dir = fixture(&case);
        let want = pytorch_output(&dir);
        for dtype in [DType::F32, DType::F64] {
            let (got, _) = candle_output(&dir, "model.safetensors", dtype);
            assert_eq!(got.len(), want.len(), "{case}");
            let e = relative_l2_f32(&got, &want);
            println!("{case} {dtype:?}: {e:.2e} off PyTorch");
            assert!(e < 1e-4, "{case} {dtype:?}: {e:e}");
        }
    }
}

/// The shared neuraloperator checkpoint, native C64 and real-pair exports.
#[test]
fn the_shared_darcy_checkpoint_reproduces_pytorch() {
    let dir = shared_fixture();
    let want = pytorch_output(&dir);
    for checkpoint in ["model.safetensors", "model_real.safetensors"] {
        let (got, _) = candle_output(&dir, checkpoint, DType::F32);
        let e = relative_l2_f32(&got, &want);
        println!("{checkpoint}: {e:.2e} off PyTorch");
        assert!(e < 1e-4, "{checkpoint}: {e:e}");
    }
}

/// The Candle model equals the Burn model (reference path, f64) on the same
/// checkpoint, and its own checkpoint loads in the Burn model to the same
/// outputs (dense weights, so factorized fixtures come back dense).
#[test]
fn the_candle_model_equals_the_burn_model_and_its_checkpoints_load_there() {
    let device = Default::default();
    for case in [
        "fno2d_tucker",
        "fno1d_odd_modes_identity_linear_groupnorm_padded",
        "fno2d_separable",
    ] {
        let dir = fixture(case);
        let x = fno_datasets::npy::read(dir.join("x.npy")).unwrap();
        let (candle, model) = candle_output(&dir, "model.safetensors", DType::F64);
        let burn_of = |bytes: &[u8]| {
            let m = fno_models::Fno::<NdArray<f64>>::load_checkpoint(bytes, None, &device).unwrap();
            fno_models::infer(&m, &x.data, &x.shape, 4, &device, |_, _| {}).unwrap()
        };
        let burn = burn_of(&std::fs::read(dir.join("model.safetensors")).unwrap());
        let e = relative_l2_f32(&candle, &burn);
        assert!(e < 1e-6, "{case}: Candle {e:e} off Burn");
        let saved = model.save_safetensors().unwrap();
        let reloaded = burn_of(&saved);
        let e = relative_l2_f32(&reloaded, &burn);
        assert!(e < 1e-6, "{case}: the Candle checkpoint in Burn is {e:e} off");
    }
}

fn tiny_config() -> FnoConfig {
    let mut cfg = FnoConfig::new(&[6], 1, 1, 8);
    cfg.n_layers = 2;
    cfg
}

/// `(x, y)` of a smoothing problem on a 1D grid: y is a moving average of x.
fn smoothing_batch(seed: u64, dtype: DType) -> (Tensor, Tensor) {
    let (b, n) = (8, 32);
    let x: Vec<f64> = uniform(b * n, seed).iter().map(|v| 2.0 * v - 1.0).collect();
    let y: Vec<f64> = (0..b * n)
        .map(|i| {
            let (s, j) = (i / n, i % n);
            (0..5).map(|d| x[s * n + (j + n + d - 2) % n]).sum::<f64>() / 5.0
        })
        .collect();
    let t = |v: Vec<f64>| {
        Tensor::from_vec(v, (b, 1, n), &Device::Cpu)
            .unwrap()
            .to_dtype(dtype)
            .unwrap()
    };
    (t(x), t(y))
}

fn mse(model: &fno_candle::Fno, x: &Tensor, y: &Tensor) -> Tensor {
    (model.forward(x, true).unwrap() - y)
        .unwrap()
        .sqr()
        .unwrap()
        .mean_all()
        .unwrap()
}

#[test]
fn a_fresh_model_trains_with_adamw() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let model = fno_candle::Fno::new(&tiny_config(), vb).unwrap();
    let (x, y) = smoothing_batch(seed, DType::F32);
    let mut opt = AdamW::new(
        varmap.all_vars(),
        ParamsAdamW {
            lr: 3e-3,
            weight_decay: 0.0,
            ..Default::default()
        },
    )
    .unwrap();
    let first = mse(&model, &x, &y).to_scalar::<f32>().unwrap();
    for _ in 0..120 {
        opt.backward_step(&mse(&model, &x, &y)).unwrap();
    }
    let last = mse(&model, &x, &y).to_scalar::<f32>().unwrap();
    println!("loss {first:.4e} → {last:.4e}");
    assert!(last < 0.25 * first, "loss {first} → {last}");
}

/// Gradients of the model's loss with respect to a spectral weight, a
/// lifting weight and a norm's weight, against central differences (f64).
#[test]
fn model_gradients_match_finite_differences() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let mut cfg = tiny_config();
    cfg.norm = Some("group_norm".into());
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F64, &Device::Cpu);
    let model = fno_candle::Fno::new(&cfg, vb).unwrap();
    let (x, y) = smoothing_batch(seed, DType::F64);
    let loss = |m: &fno_candle::Fno| {
        (m.forward(&x, false).unwrap() - &y)
            .unwrap()
            .sqr()
            .unwrap()
            .sum_all()
            .unwrap()
    };
    let grads = loss(&model).backward().unwrap();
    let vars = varmap.data().lock().unwrap().clone();
    for name in [
        "fno_blocks.convs.1.weight.tensor",
        "lifting.fcs.0.weight",
        "fno_blocks.norm.1.weight",
    ] {
        let var = &vars[name];
        let grad = grads
            .get(var.as_tensor())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f64>()
            .unwrap();
        let values = var.as_tensor().flatten_all().unwrap().to_vec1::<f64>().unwrap();
        // Large enough that the loss's round-off (it sums ~10³ terms) stays below 1e-9 of a gradient.
        let h = 1e-4;
        let (mut numeric, mut analytic) = (Vec::new(), Vec::new());
        for index in [0, values.len() / 2, values.len() - 1] {
            let at = |delta: f64| {
                let mut v = values.clone();
                v[index] += delta;
                var.set(&Tensor::from_vec(v, var.shape(), &Device::Cpu).unwrap())
                    .unwrap();
                loss(&model).to_scalar::<f64>().unwrap()
            };
            numeric.push((at(h) - at(-h)) / (2.0 * h));
            analytic.push(grad[index]);
            var.set(&Tensor::from_vec(values.clone(), var.shape(), &Device::Cpu).unwrap())
                .unwrap();
        }
        let e = relative_l2(&analytic, &numeric);
        assert!(e < 1e-6, "{name}: {analytic:?} vs {numeric:?}");
    }
}

#[test]
fn factorized_models_are_refused_fresh_and_bad_checkpoints_are_named() {
    let mut cfg = tiny_config();
    cfg.factorization = Some("tucker".into());
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let err = fno_candle::Fno::new(&cfg, vb).err().expect("refused").to_string();
    assert!(err.contains("dense spectral weights"), "{err}");

    let bytes = std::fs::read(fixture("fno2d_tucker").join("model.safetensors")).unwrap();
    let err = fno_candle::Fno::load(&bytes[..bytes.len() / 2], None, DType::F32, &Device::Cpu)
        .err()
        .expect("truncated")
        .to_string();
    assert!(err.contains("truncated"), "{err}");
    let err = fno_candle::Fno::load(&bytes, Some(&tiny_config()), DType::F32, &Device::Cpu)
        .err()
        .expect("wrong configuration")
        .to_string();
    assert!(err.contains("does not match the configuration"), "{err}");
}
