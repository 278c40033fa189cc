//! The GELU kernels on wgpu (lavapipe in CI) against their f64 oracles, on
//! lengths that take the four-wide and the scalar path, over [-8, 8], with
//! values stored in f32, f16 and bf16 (the oracle of the stored inputs, the
//! output within its rounding).

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::activation::{gelu, gelu_cpu, gelu_derivative_cpu, gelu_grad};
use fno_kernels::precision::Precision;
use fno_testing::{fresh_seed, uniform_f32};

#[test]
fn gelu_and_its_gradient_match_the_oracle() {
    gelus(&WgpuRuntime::client(&WgpuDevice::default()));
}

/// The same on CUDA (f16 and native bf16 buffers): run on a GPU machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn gelu_and_its_gradient_match_the_oracle_on_cuda() {
    gelus(&crate::cuda_client_with_async_copies());
}

fn gelus<R: Runtime>(client: &ComputeClient<R>) {
    let seed = fresh_seed();
    println!("seed {seed}");
    for (precision, len) in Precision::ALL
        .into_iter()
        .flat_map(|p| [1, 7, 1024, 4099].map(|len| (p, len)))
    {
        let stored = precision.stored_on(client);
        let x = stored.round(
            &uniform_f32(len, seed + len as u64)
                .iter()
                .map(|v| 8.0 * v)
                .collect::<Vec<_>>(),
        );
        let g = stored.round(&uniform_f32(len, seed + 1));
        let upload = |v: &[f32]| client.create_from_slice(&stored.encode(v));
        let (hx, hg) = (upload(&x), upload(&g));
        let (hy, hd) = (upload(&vec![f32::NAN; len]), upload(&vec![f32::NAN; len]));
        gelu(client, precision, &hx, &hy, len);
        gelu_grad(client, precision, &hx, &hg, &hd, len);
        let read = |h| stored.decode(&client.read_one(h).unwrap());
        let (y, d) = (read(hy), read(hd));
        for i in 0..len {
            let xi = x[i] as f64;
            let (want_y, want_d) = (gelu_cpu(xi), g[i] as f64 * gelu_derivative_cpu(xi));
            // f32 arithmetic, then the output's rounding (and f16's subnormal step).
            let u = if precision == Precision::F32 {
                0.0
            } else {
                precision.unit_roundoff()
            };
            let tol = 1e-6 * (1.0 + xi.abs()) + u * want_y.abs().max(want_d.abs()) + 1e-7;
            assert!(
                (y[i] as f64 - want_y).abs() < tol,
                "{precision} gelu({xi}) = {} not {want_y} (len {len}, seed {seed})",
                y[i]
            );
            assert!(
                (d[i] as f64 - want_d).abs() < tol,
                "{precision} gelu'({xi})·g = {} not {want_d} (len {len}, seed {seed})",
                d[i]
            );
        }
    }
}

/// A tensor of more values than 65,535 cubes hold (an odd length: one value
/// a unit): the launch spills onto a second grid axis, which devices need
/// (wgpu allows 65,535 cubes an axis), and every value is computed.
#[test]
fn gelu_covers_tensors_past_one_grid_axis() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let len = 65_535 * 256 + 1001;
    let x: Vec<f32> = (0..len).map(|i| (i % 1000) as f32 / 125.0 - 4.0).collect();
    let hx = client.create_from_slice(f32::as_bytes(&x));
    let hy = client.create_from_slice(f32::as_bytes(&vec![f32::NAN; len]));
    gelu(&client, Precision::F32, &hx, &hy, len);
    let y = f32::from_bytes(&client.read_one(hy).unwrap()).to_vec();
    let wrong: Vec<usize> = (0..len)
        .filter(|&i| {
            let err = (y[i] as f64 - gelu_cpu(x[i] as f64)).abs();
            err.is_nan() || err >= 1e-5
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} values wrong or not computed, the first {:?}",
        wrong.len(),
        wrong.first()
    );
}
