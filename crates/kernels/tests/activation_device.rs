//! The GELU kernels on wgpu (lavapipe in CI) against their f64 oracles, on
//! lengths that take the four-wide and the scalar path, over [-8, 8].

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::activation::{gelu, gelu_cpu, gelu_derivative_cpu, gelu_grad};
use fno_kernels::testing::{fresh_seed, uniform_f32};

#[test]
fn gelu_and_its_gradient_match_the_oracle() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    for len in [1, 7, 1024, 4099] {
        let x: Vec<f32> = uniform_f32(len, seed + len as u64).iter().map(|v| 8.0 * v).collect();
        let g = uniform_f32(len, seed + 1);
        let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
        let (hx, hg) = (upload(&x), upload(&g));
        let (hy, hd) = (upload(&vec![f32::NAN; len]), upload(&vec![f32::NAN; len]));
        gelu(&client, &hx, &hy, len);
        gelu_grad(&client, &hx, &hg, &hd, len);
        let read = |h| f32::from_bytes(&client.read_one(h).unwrap()).to_vec();
        let (y, d) = (read(hy), read(hd));
        for i in 0..len {
            let xi = x[i] as f64;
            let (want_y, want_d) = (gelu_cpu(xi), g[i] as f64 * gelu_derivative_cpu(xi));
            let tol = 1e-6 * (1.0 + xi.abs());
            assert!(
                (y[i] as f64 - want_y).abs() < tol,
                "gelu({xi}) = {} not {want_y} (len {len}, seed {seed})",
                y[i]
            );
            assert!(
                (d[i] as f64 - want_d).abs() < tol,
                "gelu'({xi})·g = {} not {want_d} (len {len}, seed {seed})",
                d[i]
            );
        }
    }
}
