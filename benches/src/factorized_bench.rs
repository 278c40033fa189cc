//! Times the factorized spectral convolution (TFNO's Tucker weights at ranks
//! 0.1 and 0.42, contracted through the factors on the Unfused path) beside
//! the dense one on the spectral anchors, forward and forward+backward; one
//! JSON line per case for `factorized_compare.py`, which times
//! neuraloperator's factorized `SpectralConv` in the same run. Each Tucker
//! output and every gradient (input, bias, factors) is also compared with the
//! Reference path (the dense reconstruction): `vs_reference`,
//! `grads_vs_reference` (the largest relative error of any gradient).
//!
//! Usage: `factorized_bench [cuda|wgpu] [--quick] [--reps N] [--only I]`
//! (`--only I`: case I alone, from 0, e.g. under a profiler).

mod anchors;

use anchors::{median_ms, stored_modes, Measured, CASES};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};
use burn_cubecl::{CubeBackend, CubeRuntime};
use fno_models::rank::{tucker_ranks, Rank};
use fno_ops::{
    factorized_spectral_conv, Factorization, FactorizedWeight, SpectralConvBackend, SpectralConvSpec, SpectralImpl,
    WeightForm,
};
use fno_testing::relative_l2_f32;

/// TFNO's default rank and the one its examples train with.
const RANKS: [f64; 2] = [0.1, 0.42];

type Inner<R> = CubeBackend<R, f32, i32, u8>;

/// A weight of `form` with tensors drawn so that the weight's entries are
/// about 0.05 (each of the `n` tensors' entries about 0.05^(1/n)).
fn weight<B: Backend>(form: &WeightForm, device: &B::Device) -> FactorizedWeight<B> {
    let shapes = form.tensors();
    let scale = 0.05f64.powf(1.0 / shapes.len() as f64);
    let tensors = shapes
        .iter()
        .map(|(_, s)| {
            // Allocated flat, as the model's are: no pitched rows.
            let stored = WeightForm::storage_shape(s);
            Tensor::<B, 1>::random([stored[0] * stored[1]], Distribution::Uniform(-scale, scale), device)
                .reshape(stored)
        })
        .collect();
    FactorizedWeight {
        form: form.clone(),
        tensors,
    }
}

/// Forward and forward+backward times of `w` through `imp`, and a sample of the output.
fn time_form<R: CubeRuntime, const D: usize>(
    w: &FactorizedWeight<Autodiff<Inner<R>>>,
    x: &Tensor<Autodiff<Inner<R>>, D>,
    bias: &Tensor<Autodiff<Inner<R>>, 1>,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
    reps: usize,
) -> (Measured, Measured, Vec<f32>) {
    let (device, form) = (x.device(), &w.form);
    let inner = FactorizedWeight {
        form: form.clone(),
        tensors: w.tensors.iter().map(|t| t.clone().inner()).collect(),
    };
    let (xi, bi) = (x.clone().inner(), bias.clone().inner());
    let run = || factorized_spectral_conv(xi.clone(), &inner, Some(bi.clone()), spec, imp).unwrap();
    let y = run();
    let sample = y
        .clone()
        .flatten::<1>(0, D - 1)
        .narrow(0, 0, 4096.min(y.shape().num_elements()));
    let sample: Vec<f32> = sample.into_data().to_vec().unwrap();
    let g = Tensor::<Autodiff<Inner<R>>, D>::random(y.dims(), Distribution::Uniform(-1.0, 1.0), &device);
    let fwd = median_ms::<Inner<R>>(&device, reps, || {
        let _ = run();
    });
    let fwd_bwd = median_ms::<Inner<R>>(&device, reps, || {
        let tracked = FactorizedWeight {
            form: form.clone(),
            tensors: w.tensors.iter().map(|t| t.clone().require_grad()).collect(),
        };
        let (x, b) = (x.clone().require_grad(), bias.clone().require_grad());
        let y = factorized_spectral_conv(x, &tracked, Some(b), spec, imp).unwrap();
        let _ = (y * g.clone()).backward();
    });
    (fwd, fwd_bwd, sample)
}

/// The gradients of `Σ g ⊙ y` for the input, the bias and every stored
/// tensor of `w` through `imp`, `g` drawn from `seed`.
fn gradients<R: CubeRuntime, const D: usize>(
    w: &FactorizedWeight<Autodiff<Inner<R>>>,
    x: &Tensor<Autodiff<Inner<R>>, D>,
    bias: &Tensor<Autodiff<Inner<R>>, 1>,
    g: &Tensor<Autodiff<Inner<R>>, D>,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Vec<Vec<f32>> {
    let tracked = FactorizedWeight {
        form: w.form.clone(),
        tensors: w.tensors.iter().map(|t| t.clone().require_grad()).collect(),
    };
    let (x, b) = (x.clone().require_grad(), bias.clone().require_grad());
    let y = factorized_spectral_conv(x.clone(), &tracked, Some(b.clone()), spec, imp).unwrap();
    let grads = (y * g.clone()).backward();
    let values = |t: Option<Tensor<Inner<R>, 2>>| -> Vec<f32> { t.expect("a gradient").into_data().to_vec().unwrap() };
    let mut out = vec![
        values(x.grad(&grads).map(|t| t.flatten::<2>(0, D - 2))),
        values(b.grad(&grads).map(|t| t.unsqueeze::<2>())),
    ];
    out.extend(tracked.tensors.iter().map(|t| values(t.grad(&grads))));
    out
}

fn bench_case<R: CubeRuntime, const D: usize>(
    (dim, batch, channels, n, n_modes): (usize, usize, usize, usize, &[usize]),
    reps: usize,
) where
    Autodiff<Inner<R>>: SpectralConvBackend,
{
    let stored = stored_modes(dim, n_modes);
    let spec = SpectralConvSpec::new(&stored);
    let device = Default::default();
    let mut xs = [n; D];
    xs[0] = batch;
    xs[1] = channels;
    let x = Tensor::<Autodiff<Inner<R>>, D>::random(xs, Distribution::Uniform(-1.0, 1.0), &device);
    let bias = Tensor::random([channels], Distribution::Uniform(-1.0, 1.0), &device);
    let mut shape = vec![channels, channels];
    shape.extend(&stored);
    let dense = WeightForm {
        factorization: Factorization::Dense,
        separable: false,
        shape: shape.clone(),
        ranks: vec![],
    };
    let (dense_fwd, dense_fwd_bwd, _) =
        time_form::<R, D>(&weight(&dense, &device), &x, &bias, &spec, SpectralImpl::Unfused, reps);
    // The host's share of a call: where it nears the call's time, launches bound it.
    let times = |name: &str, fwd: Measured, fwd_bwd: Measured| {
        format!(
            "\"{name}fwd_ms\": {:.5}, \"{name}fwd_bwd_ms\": {:.5}, \"{name}fwd_host_ms\": {:.5}, \"{name}fwd_bwd_host_ms\": {:.5}",
            fwd.ms, fwd_bwd.ms, fwd.host_ms, fwd_bwd.host_ms
        )
    };
    let tucker: Vec<String> = RANKS
        .iter()
        .map(|&fraction| {
            let ranks = tucker_ranks(&shape, &Rank::Fraction(fraction), &[]).unwrap();
            let form = WeightForm {
                factorization: Factorization::Tucker,
                ranks: ranks.clone(),
                ..dense.clone()
            };
            let w = weight(&form, &device);
            let (fwd, fwd_bwd, sample) = time_form::<R, D>(&w, &x, &bias, &spec, SpectralImpl::Unfused, reps);
            let (_, _, want) = time_form::<R, D>(&w, &x, &bias, &spec, SpectralImpl::Reference, 1);
            // The backward too: every gradient against the reference path's.
            let g = Tensor::random(x.dims(), Distribution::Uniform(-1.0, 1.0), &device);
            let ours = gradients::<R, D>(&w, &x, &bias, &g, &spec, SpectralImpl::Unfused);
            let reference = gradients::<R, D>(&w, &x, &bias, &g, &spec, SpectralImpl::Reference);
            let grad_err = ours
                .iter()
                .zip(&reference)
                .map(|(a, b)| relative_l2_f32(a, b))
                .fold(0.0, f64::max);
            format!(
                "{{\"rank\": {fraction}, \"ranks\": {ranks:?}, {}, \"vs_reference\": {:.2e}, \"grads_vs_reference\": {:.2e}}}",
                times("", fwd, fwd_bwd),
                relative_l2_f32(&sample, &want),
                grad_err
            )
        })
        .collect();
    println!(
        "{{\"case\": \"factorized\", \"dim\": {dim}, \"B\": {batch}, \"C\": {channels}, \"N\": {n}, \"modes\": {n_modes:?}, {}, \"tucker\": [{}]}}",
        times("dense_", dense_fwd, dense_fwd_bwd),
        tucker.join(", ")
    );
}

fn run<R: CubeRuntime>(quick: bool, reps: usize, only: Option<usize>)
where
    Autodiff<Inner<R>>: SpectralConvBackend,
{
    let chosen = CASES.iter().enumerate().filter(|(i, _)| only.is_none_or(|o| o == *i));
    for (_, &(dim, batch, channels, n, n_modes)) in chosen {
        let (batch, channels, n) = if quick {
            (2.min(batch), 8.min(channels), n.min(64))
        } else {
            (batch, channels, n)
        };
        let n_modes: Vec<usize> = n_modes.iter().map(|&m| m.min(n)).collect();
        let case = (dim, batch, channels, n, n_modes.as_slice());
        match dim {
            1 => bench_case::<R, 3>(case, reps),
            _ => bench_case::<R, 4>(case, reps),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let number = |flag: &str| {
        args.iter().position(|a| a == flag).map(|i| {
            args.get(i + 1)
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or_else(|| {
                    eprintln!("error: {flag} needs a number");
                    std::process::exit(2);
                })
        })
    };
    let only = number("--only");
    if only.is_some_and(|i| i >= CASES.len()) {
        eprintln!("error: --only: there are {} cases", CASES.len());
        std::process::exit(2);
    }
    let reps = number("--reps").unwrap_or(if quick { 3 } else { 15 }).max(1);
    match args.get(1).map(String::as_str) {
        #[cfg(feature = "wgpu")]
        Some("wgpu") => run::<cubecl::wgpu::WgpuRuntime>(quick, reps, only),
        #[cfg(feature = "cuda")]
        Some("cuda") | None => run::<cubecl::cuda::CudaRuntime>(quick, reps, only),
        other => {
            eprintln!("error: unknown or uncompiled backend {other:?} (expected cuda or wgpu)");
            std::process::exit(2);
        }
    }
}
