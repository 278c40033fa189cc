//! Times the non-uniform spectral convolution (`fno_ops::nonuniform_spectral_conv`)
//! forward and forward + backward on CUDA, one JSON line per case, for
//! `nonuniform_compare.py` to set beside the direct O(M·K) Fourier sums in
//! torch on the same GPU.
//!
//! Usage: `nonuniform_bench [--points M] [--modes N] [--batch B] [--channels C] [--eps E]`
//! (defaults 10⁵ points in 2D, 64² modes, B = 4, C = 32, ε = 1e-5); the
//! points are uniform in [−π, π)², the output points the input ones. First
//! it checks the layer on CUDA (rows padded by Burn's allocator) against the
//! f64 host path on a small case: `y` and `∂(Σ r ⊙ y)/∂x`.

use std::time::Instant;

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Distribution, Tensor, TensorData};
use fno_ops::{nonuniform_spectral_conv, NufftBackend, PointCloud};
use fno_testing::{relative_l2, uniform};

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

fn tensor<Bk: Backend, const D: usize>(values: Vec<f64>, shape: [usize; D]) -> Tensor<Bk, D> {
    Tensor::from_data(TensorData::new(values, shape), &Default::default())
}

/// `y` and `∂(Σ r ⊙ y)/∂x` of the layer on `Bk` for a small fixed case.
fn small_case<Bk: AutodiffBackend + NufftBackend>() -> [Vec<f64>; 2] {
    let (m, n, batch, channels) = (2000, 16, 2, 4);
    let points = PointCloud::new(uniform(m * 2, 3).iter().map(|v| v * std::f64::consts::PI).collect(), 2).unwrap();
    let x: Tensor<Bk, 3> = tensor(uniform(batch * channels * m, 4), [batch, channels, m]).require_grad();
    let w: Tensor<Bk, 4> = tensor(
        uniform(channels * channels * n * n * 2, 5),
        [channels, channels, n * n, 2],
    );
    let r: Tensor<Bk, 3> = tensor(uniform(batch * channels * m, 6), [batch, channels, m]);
    let y = nonuniform_spectral_conv(x.clone(), w, &points, &points, &[n, n], 1e-6);
    let grads = (y.clone() * r).sum().backward();
    let values = |t: TensorData| t.convert::<f64>().to_vec::<f64>().unwrap();
    [values(y.into_data()), values(x.grad(&grads).unwrap().into_data())]
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
    let [y, gx] = small_case::<B>();
    let [y_host, gx_host] = small_case::<Autodiff<NdArray<f64>>>();
    let (y_err, gx_err) = (relative_l2(&y, &y_host), relative_l2(&gx, &gx_host));
    assert!(
        y_err < 1e-4 && gx_err < 1e-4,
        "CUDA vs host: y {y_err:e}, dL/dx {gx_err:e}"
    );
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
        "{{\"points\": {m}, \"modes\": [{n}, {n}], \"batch\": {batch}, \"channels\": {channels}, \"eps\": {eps:e}, \"first_call_ms\": {first_ms:.1}, \"fwd_ms\": {fwd:.3}, \"fwd_bwd_ms\": {fwd_bwd:.3}, \"check_y_err\": {y_err:.1e}, \"check_dx_err\": {gx_err:.1e}}}"
    );
}
