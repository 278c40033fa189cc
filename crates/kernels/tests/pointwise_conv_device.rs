//! The 1×1 convolution kernel on wgpu (lavapipe in CI) against its f64 oracle:
//! the weight as stored and transposed (the input gradient), with and without
//! a bias; one-wide and partial blocks of rows and points, contractions that
//! fill no chunk and several chunks, points read as vectors of four and one by one.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::pointwise_conv::PointwiseConvProblem;
use fno_kernels::testing::{fresh_seed, relative_l2, uniform_f32};

#[test]
fn pointwise_convolutions_match_the_oracle() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let mut widths = std::collections::BTreeSet::new();
    for (case, &(batch, m, k, points)) in [
        (1, 1, 1, 1),
        (2, 64, 64, 300),
        (3, 128, 3, 129),
        (2, 1, 128, 1000),
        (4, 5, 33, 17),
        (1, 70, 20, 256),
        (2, 24, 40, 1028),
    ]
    .iter()
    .enumerate()
    {
        for (transposed, bias) in [(false, true), (false, false), (true, false)] {
            // The weight stored [m, k], or [k, m] and read transposed.
            let (a_row, a_col) = if transposed { (1, m) } else { (k, 1) };
            let problem = PointwiseConvProblem {
                batch,
                m,
                k,
                points,
                a_row,
                a_col,
                bias,
            };
            // Fresh buffers start on 16 bytes.
            widths.insert(problem.config(true).x_width);
            let seed = seed + 10 * case as u64;
            let a = uniform_f32(m * k, seed);
            let x = uniform_f32(batch * k * points, seed + 1);
            let b = uniform_f32(m, seed + 2);
            let want = problem.run_cpu(&f64s(&a), &f64s(&x), bias.then(|| f64s(&b)).as_deref());
            let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
            let (ha, hx, hb) = (upload(&a), upload(&x), upload(&b));
            let hy = upload(&vec![f32::NAN; batch * m * points]);
            problem.launch(&client, &ha, &hx, bias.then_some(&hb), &hy);
            let got = f64s(f32::from_bytes(&client.read_one(hy).unwrap()));
            assert!(got.iter().all(|v| v.is_finite()), "{problem:?}: output unwritten");
            let e = relative_l2(&got, &want);
            assert!(
                e < 1e-6,
                "{problem:?} ({:?}): error {e:e} (seed {seed})",
                problem.config(true)
            );
        }
    }
    assert_eq!(widths.len(), 2, "points read only {widths:?} at a time");
}
