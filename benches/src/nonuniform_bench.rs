//! Times the non-uniform spectral convolution (`fno_ops::nonuniform_spectral_conv`)
//! forward and forward + backward on CUDA, one JSON line per case, for
//! `nonuniform_compare.py` to set beside the direct O(M·K) Fourier sums in
//! torch on the same GPU.
//!
//! Usage: `nonuniform_bench [--points M] [--modes N] [--batch B] [--channels C] [--eps E]`
//! (defaults 10⁵ points in 2D, 64² modes, B = 4, C = 32, ε = 1e-5); the
//! points are uniform in [−π, π)², the output points the input ones.

use std::time::Instant;

use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::{Distribution, Tensor};
use fno_kernels::testing::uniform;
use fno_ops::{nonuniform_spectral_conv, PointCloud};

type Inner = fno_ops::Cuda;
type B = Autodiff<Inner>;

/// Median over 5 groups of back-to-back calls of the time per call (ms).
fn median_ms<Bk: Backend>(device: &Bk::Device, reps: usize, mut f: impl FnMut()) -> f64 {
    for _ in 0..3 {
        f();
    }
    Bk::sync(device).unwrap();
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..reps {
                f();
            }
            Bk::sync(device).unwrap();
            start.elapsed().as_secs_f64() * 1e3 / reps as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[2]
}

fn arg(args: &[String], name: &str, default: f64) -> f64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name} takes a number")))
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let m = arg(&args, "--points", 1e5) as usize;
    let n = arg(&args, "--modes", 64.0) as usize;
    let batch = arg(&args, "--batch", 4.0) as usize;
    let channels = arg(&args, "--channels", 32.0) as usize;
    let eps = arg(&args, "--eps", 1e-5);
    let device = Default::default();
    let points = PointCloud::new(uniform(m * 2, 9).iter().map(|v| v * std::f64::consts::PI).collect(), 2).unwrap();
    let modes = [n, n];
    let x = Tensor::<B, 3>::random([batch, channels, m], Distribution::Normal(0.0, 1.0), &device).require_grad();
    let w =
        Tensor::<B, 4>::random([channels, channels, n * n, 2], Distribution::Normal(0.0, 0.1), &device).require_grad();
    let planned = Instant::now();
    let y = nonuniform_spectral_conv(x.clone(), w.clone(), &points, &points, &modes, eps);
    let grads = y.sum().backward();
    let _ = (x.grad(&grads), w.grad(&grads));
    B::sync(&device).unwrap();
    let first_ms = planned.elapsed().as_secs_f64() * 1e3;
    let fwd = median_ms::<B>(&device, 10, || {
        let y = nonuniform_spectral_conv(x.clone().detach(), w.clone().detach(), &points, &points, &modes, eps);
        drop(y);
    });
    let fwd_bwd = median_ms::<B>(&device, 10, || {
        let y = nonuniform_spectral_conv(x.clone(), w.clone(), &points, &points, &modes, eps);
        let grads = y.sum().backward();
        let _ = (x.grad(&grads), w.grad(&grads));
    });
    println!(
        "{{\"points\": {m}, \"modes\": [{n}, {n}], \"batch\": {batch}, \"channels\": {channels}, \"eps\": {eps:e}, \"first_call_ms\": {first_ms:.1}, \"fwd_ms\": {fwd:.3}, \"fwd_bwd_ms\": {fwd_bwd:.3}}}"
    );
}
