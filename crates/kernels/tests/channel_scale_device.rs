//! The per-channel scale on wgpu (lavapipe in CI) against its f64 oracle, on
//! rows of whole vectors of four and of single values; outputs poisoned first;
//! values stored in f32, f16 and bf16.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::channel_scale::ChannelScaleProblem;
use fno_kernels::precision::Precision;
use fno_testing::oracle;
use fno_testing::{fresh_seed, relative_l2, uniform_f32};

#[test]
fn channel_scales_match_the_oracle() {
    channel_scales(&WgpuRuntime::client(&WgpuDevice::default()));
}

/// The same on CUDA (f16 and native bf16 buffers): run on a GPU machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn channel_scales_match_the_oracle_on_cuda() {
    channel_scales(&crate::cuda_client_with_async_copies());
}

fn channel_scales<R: Runtime>(client: &ComputeClient<R>) {
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let mut widths = std::collections::BTreeSet::new();
    let cases = [(2, 3, 8), (2, 3, 7), (1, 64, 1024), (3, 5, 1), (4, 7, 300)];
    for (precision, (case, (batch, channels, points))) in Precision::ALL
        .into_iter()
        .flat_map(|p| cases.into_iter().enumerate().map(move |c| (p, c)))
    {
        let stored = precision.stored_on(client);
        let problem = ChannelScaleProblem {
            batch,
            channels,
            points,
        };
        let seed = seed + 10 * case as u64;
        let x = stored.round(&uniform_f32(batch * channels * points, seed));
        let scale = uniform_f32(channels, seed + 1);
        let upload = |v: &[f32]| client.create_from_slice(&stored.encode(v));
        let (hx, hs) = (upload(&x), client.create_from_slice(f32::as_bytes(&scale)));
        let hy = upload(&vec![f32::NAN; x.len()]);
        widths.insert(problem.width(&hx, &hy, stored.bytes()));
        problem.launch(client, precision, &hx, &hs, &hy);
        let got = f64s(&stored.decode(&client.read_one(hy).unwrap()));
        let e = relative_l2(&got, &oracle::channel_scale(&problem, &f64s(&x), &f64s(&scale)));
        let bound = if precision == Precision::F32 {
            1e-7
        } else {
            precision.unit_roundoff()
        };
        assert!(e < bound, "{precision} {problem:?}: error {e:e} (seed {seed})");
    }
    assert_eq!(widths.len(), 2, "rows read only {widths:?} floats at a time");
}
