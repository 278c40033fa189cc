//! The per-channel scale on wgpu (lavapipe in CI) against its f64 oracle, on
//! rows of whole vectors of four and of single floats; outputs poisoned first.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::channel_scale::ChannelScaleProblem;
use fno_kernels::testing::{fresh_seed, relative_l2, uniform_f32};

#[test]
fn channel_scales_match_the_oracle() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let mut widths = std::collections::BTreeSet::new();
    for (case, (batch, channels, points)) in [(2, 3, 8), (2, 3, 7), (1, 64, 1024), (3, 5, 1), (4, 7, 300)]
        .into_iter()
        .enumerate()
    {
        let problem = ChannelScaleProblem {
            batch,
            channels,
            points,
        };
        let seed = seed + 10 * case as u64;
        let x = uniform_f32(batch * channels * points, seed);
        let scale = uniform_f32(channels, seed + 1);
        let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
        let (hx, hs) = (upload(&x), upload(&scale));
        let hy = upload(&vec![f32::NAN; x.len()]);
        widths.insert(problem.width(&hx, &hy));
        problem.launch(&client, &hx, &hs, &hy);
        let got = f64s(f32::from_bytes(&client.read_one(hy).unwrap()));
        let e = relative_l2(&got, &problem.run_cpu(&f64s(&x), &f64s(&scale)));
        assert!(e < 1e-7, "{problem:?}: error {e:e} (seed {seed})");
    }
    assert_eq!(widths.len(), 2, "rows read only {widths:?} floats at a time");
}
