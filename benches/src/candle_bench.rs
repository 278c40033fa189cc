//! The Candle spectral convolution on Candle's CUDA device against the Burn
//! op's unfused kernel path on the same GPU: forward and forward+backward on
//! the spectral anchors, from the same inputs, and how far apart their
//! outputs are.
//!
//! `candle_bench [--reps N] [--only I]`; built with `--features candle-cuda`
//! (a CUDA toolkit at build time: docs/candle.md).

mod anchors;

use anchors::{median_ms, median_ms_synced, stored_modes, Measured, CASES};
use burn::backend::Autodiff;
use burn::tensor::{Tensor as BurnTensor, TensorData};
use candle_core::{Device, Tensor, Var};
use fno_ops::{spectral_conv, Cuda, SpectralConvSpec, SpectralImpl};
use fno_testing::{relative_l2_f32, uniform_f32};

/// Forward and forward+backward times, and the output.
struct Run {
    fwd: Measured,
    fwd_bwd: Measured,
    y: Vec<f32>,
    /// Candle: device copies as large as the ones its CUDA op makes to cross
    /// into CubeCL's buffers and back (x, weight, y; then the output
    /// gradient, x's and the weight's gradients), forward and forward+backward.
    copies: Option<(Measured, Measured)>,
    /// Candle: its autograd's time on the loss alone (`y·g` for a leaf `y`).
    loss: Option<Measured>,
}

/// The inputs of one case: x, weight, bias and the backward's seed g.
struct Inputs {
    x: (Vec<f32>, Vec<usize>),
    w: (Vec<f32>, Vec<usize>),
    bias: Vec<f32>,
    g: (Vec<f32>, Vec<usize>),
}

fn burn_tensor<const N: usize>(values: &(Vec<f32>, Vec<usize>)) -> BurnTensor<Autodiff<Cuda>, N> {
    let shape: [usize; N] = values.1.clone().try_into().expect("rank");
    BurnTensor::from_data(TensorData::new(values.0.clone(), shape), &Default::default())
}

fn burn_run<const D: usize, const W: usize>(inputs: &Inputs, spec: &SpectralConvSpec, reps: usize) -> Run {
    let device = Default::default();
    let (x, w, g) = (
        burn_tensor::<D>(&inputs.x),
        burn_tensor::<W>(&inputs.w),
        burn_tensor::<D>(&inputs.g),
    );
    let bias = burn_tensor::<1>(&(inputs.bias.clone(), vec![inputs.bias.len()]));
    let imp = SpectralImpl::Unfused;
    let forward = || {
        spectral_conv(
            x.clone().inner(),
            w.clone().inner(),
            Some(bias.clone().inner()),
            spec,
            imp,
        )
        .unwrap()
    };
    let y = forward().into_data().to_vec::<f32>().unwrap();
    let fwd = median_ms::<Cuda>(&device, reps, || {
        forward();
    });
    let fwd_bwd = median_ms::<Cuda>(&device, reps, || {
        let (x, w, b) = (
            x.clone().require_grad(),
            w.clone().require_grad(),
            bias.clone().require_grad(),
        );
        let y = spectral_conv(x, w, Some(b), spec, imp).unwrap();
        let _ = (y * g.clone()).backward();
    });
    Run {
        fwd,
        fwd_bwd,
        y,
        copies: None,
        loss: None,
    }
}

fn candle_run(inputs: &Inputs, spec: &SpectralConvSpec, reps: usize) -> candle_core::Result<Run> {
    let device = Device::new_cuda(0)?;
    let tensor = |v: &(Vec<f32>, Vec<usize>)| Tensor::from_slice(&v.0, v.1.as_slice(), &device);
    // x takes part in the backward, as on Burn's side.
    let (x, g) = (Var::from_tensor(&tensor(&inputs.x)?)?, tensor(&inputs.g)?);
    let w = Var::from_tensor(&tensor(&inputs.w)?)?;
    let bias = Var::from_tensor(&Tensor::from_slice(&inputs.bias, inputs.bias.len(), &device)?)?;
    let forward = || fno_candle::spectral_conv(&x, &w, Some(&bias), spec);
    let y = forward()?.flatten_all()?.to_vec1::<f32>()?;
    let sync = || device.synchronize().unwrap();
    let fwd = median_ms_synced(sync, reps, || {
        forward().unwrap();
    });
    let fwd_bwd = median_ms_synced(sync, reps, || {
        // Seeded with ones, as Burn's backward of a tensor is.
        (forward().unwrap() * &g).unwrap().backward().unwrap();
    });
    let y_t = forward()?;
    // Candle's autograd on the loss alone (y·g seeded with ones, y a leaf).
    let y_leaf = Var::from_tensor(&y_t.detach())?;
    let loss = median_ms_synced(sync, reps, || {
        (y_leaf.as_tensor() * &g).unwrap().backward().unwrap();
    });
    let copy_all = |ts: &[&Tensor]| {
        median_ms_synced(sync, reps, || {
            for t in ts {
                t.copy().unwrap();
            }
        })
    };
    let crossing = [x.as_tensor(), w.as_tensor(), &y_t, &g, x.as_tensor(), w.as_tensor()];
    let copies = Some((copy_all(&crossing[..3]), copy_all(&crossing)));
    Ok(Run {
        fwd,
        fwd_bwd,
        y,
        copies,
        loss: Some(loss),
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).map(|v| v.parse::<usize>().expect("a count"))
    };
    let reps = flag("--reps").unwrap_or(20);
    let only = flag("--only");
    println!("| case | Burn unfused fwd / fwd+bwd ms | Candle fwd / fwd+bwd ms | Candle / Burn (fwd / fwd+bwd) | Candle vs Burn (y) | crossing copies fwd / fwd+bwd ms | Candle autograd on the loss alone ms |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (i, &(dims, batch, channels, n, n_modes)) in CASES.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let modes = stored_modes(dims, n_modes);
        let grid = vec![n; dims];
        let x_shape = [&[batch, channels][..], &grid].concat();
        let w_shape = [&[channels, channels][..], &modes, &[2]].concat();
        let values = |shape: &[usize], seed: u64| uniform_f32(shape.iter().product(), seed);
        let inputs = Inputs {
            x: (values(&x_shape, 1), x_shape.clone()),
            w: (values(&w_shape, 2), w_shape.clone()),
            bias: values(&[channels], 3),
            g: (values(&x_shape, 4), x_shape.clone()),
        };
        let spec = SpectralConvSpec::new(&modes);
        let burn = match dims {
            1 => burn_run::<3, 4>(&inputs, &spec, reps),
            _ => burn_run::<4, 5>(&inputs, &spec, reps),
        };
        let candle = candle_run(&inputs, &spec, reps).unwrap_or_else(|e| panic!("case {i}: {e}"));
        let copies = candle.copies.expect("Candle's run measures its copies");
        let label = format!("{dims}D B{batch} C{channels} N{n} m{n_modes:?}");
        println!(
            "| {label} | {:.3} / {:.3} | {:.3} / {:.3} | {:.2} / {:.2} | {:.1e} | {:.3} / {:.3} | {:.3} |",
            burn.fwd.ms,
            burn.fwd_bwd.ms,
            candle.fwd.ms,
            candle.fwd_bwd.ms,
            candle.fwd.ms / burn.fwd.ms,
            candle.fwd_bwd.ms / burn.fwd_bwd.ms,
            relative_l2_f32(&candle.y, &burn.y),
            copies.0.ms,
            copies.1.ms,
            candle.loss.expect("Candle's run measures its loss").ms,
        );
    }
}
