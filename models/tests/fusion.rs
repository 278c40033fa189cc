//! The FNO on Burn's fusion backend (`burn::backend::Wgpu`, lavapipe in CI):
//! neuraloperator fixtures reproduced through `--impl auto`'s choice, and a few
//! optimiser steps of one model landing where they land on `CubeBackend`.

use burn::backend::{Autodiff, NdArray, Wgpu};
use burn::module::Module;
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::record::{BinBytesRecorder, FullPrecisionSettings, Recorder};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use fno_models::{Fno, FnoConfig};
use fno_ops::{SpectralConvBackend, SpectralImpl};
use fno_testing::{fresh_seed, relative_l2, uniform};

use crate::neuralop_configurations::error_vs_pytorch;

/// Burn's wgpu backend without Burn fusion.
type Cube = fno_ops::Wgpu;

#[test]
fn fixtures_reproduce_pytorch_on_the_fusion_backend() {
    // 1D (Auto runs it fused), 2D with a Tucker weight, 3D, instance norm and soft gating.
    for case in [
        "fno1d_odd_modes_identity_linear_groupnorm_padded",
        "fno2d_softgating_instancenorm_nogrid_c64",
        "fno2d_tucker",
        "fno3d_no_channel_mlp_tanh",
    ] {
        let e = error_vs_pytorch::<Wgpu>(case, SpectralImpl::Auto);
        println!("{case}, wgpu with Burn fusion, auto: relative L2 error {e:.2e}");
        assert!(e <= 1e-5, "{case}: {e:e}");
    }
}

/// Three AdamW steps on `Σ (fno(x) − t)²` from `weights` (a record of
/// `config`'s model): each step's loss, then the model's output on `x`.
fn train_steps<B: AutodiffBackend + SpectralConvBackend>(config: &FnoConfig, weights: &[u8], seed: u64) -> Vec<Vec<f64>>
where
    B::InnerBackend: SpectralConvBackend,
{
    let device = Default::default();
    let record = Recorder::<B>::load(&recorder(), weights.to_vec(), &device).unwrap();
    let mut model = Fno::<B>::new(config, &device)
        .unwrap()
        .load_record(record)
        .with_spectral_impl(SpectralImpl::Unfused);
    let shape = [2, 1, 16, 12];
    let n = shape.iter().product();
    let x = Tensor::<B, 4>::from_data(TensorData::new(uniform(n, seed), shape), &device);
    let target = Tensor::<B, 4>::from_data(TensorData::new(uniform(n, seed + 1), shape), &device);
    let mut optim = AdamWConfig::new().init::<B, Fno<B>>();
    let mut out = Vec::new();
    for _ in 0..3 {
        let loss = (model.forward(x.clone()).unwrap() - target.clone())
            .powi_scalar(2)
            .sum();
        out.push(loss.clone().into_data().convert::<f64>().to_vec().unwrap());
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optim.step(1e-3, model, grads);
    }
    let y = model.forward(x).unwrap();
    out.push(y.into_data().convert::<f64>().to_vec().unwrap());
    out
}

fn recorder() -> BinBytesRecorder<FullPrecisionSettings> {
    BinBytesRecorder::default()
}

#[test]
fn training_steps_on_the_fusion_backend_equal_cube_backends() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let mut config = FnoConfig::new(&[6, 5], 1, 1, 8);
    config.n_layers = 2;
    let model = Fno::<NdArray>::new(&config, &Default::default()).unwrap();
    let weights = Recorder::<NdArray>::record(&recorder(), model.into_record(), ()).unwrap();
    let fusion = train_steps::<Autodiff<Wgpu>>(&config, &weights, seed);
    let cube = train_steps::<Autodiff<Cube>>(&config, &weights, seed);
    for (i, (f, c)) in fusion.iter().zip(&cube).enumerate() {
        let e = relative_l2(f, c);
        assert!(
            e <= 1e-5,
            "result {i} (losses, then the output): {e:e} off CubeBackend's"
        );
    }
    assert!(fusion[2][0] < fusion[0][0], "the loss falls: {fusion:?}");
}
