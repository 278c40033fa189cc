//! The 1×1 convolution's parameter gradients on wgpu (lavapipe in CI) against
//! their f64 oracle: one-wide and partial blocks on both sides, points that
//! fill no chunk, several slices per sample, with and without the bias; the
//! activations and their gradients stored in f32, f16 and bf16 (f32 sums and
//! outputs, so as exact as f32 against the oracle of the stored values).

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::pointwise_grad::PointwiseGradProblem;
use fno_kernels::precision::Precision;
use fno_testing::oracle;
use fno_testing::{fresh_seed, relative_l2, uniform_f32};

#[test]
fn pointwise_gradients_match_the_oracle() {
    pointwise_gradients(&WgpuRuntime::client(&WgpuDevice::default()));
}

/// The same on CUDA (f16 and native bf16 buffers): run on a GPU machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn pointwise_gradients_match_the_oracle_on_cuda() {
    pointwise_gradients(&crate::cuda_client_with_async_copies());
}

fn pointwise_gradients<R: Runtime>(client: &ComputeClient<R>) {
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let mut sliced = false;
    for (case, &(batch, cout, cin, points)) in [
        (1, 1, 1, 1),
        (3, 5, 7, 33),
        (2, 64, 64, 1000),
        (4, 128, 3, 300),
        (1, 1, 128, 5000),
        (5, 70, 20, 257),
        (0, 4, 4, 16),
    ]
    .iter()
    .enumerate()
    {
        for (precision, bias) in Precision::ALL.into_iter().flat_map(|p| [(p, false), (p, true)]) {
            let stored = precision.stored_on(client);
            let problem = PointwiseGradProblem {
                batch,
                cout,
                cin,
                points,
                bias,
            };
            let seed = seed + 10 * case as u64;
            let g = stored.round(&uniform_f32(batch * cout * points, seed));
            let x = stored.round(&uniform_f32(batch * cin * points, seed + 1));
            let (want_w, want_b) = oracle::pointwise_grad(&problem, &f64s(&g), &f64s(&x));
            let upload = |v: &[f32]| client.create_from_slice(&stored.encode(if v.is_empty() { &[0.0] } else { v }));
            let (hg, hx) = (upload(&g), upload(&x));
            let hw = client.create_from_slice(f32::as_bytes(&vec![f32::NAN; cout * cin]));
            let hb = client.create_from_slice(f32::as_bytes(&vec![f32::NAN; cout]));
            problem.launch(client, precision, &hg, &hx, &hw, bias.then_some(&hb));
            let read = |h| f64s(f32::from_bytes(&client.read_one(h).unwrap()));
            let got_w = read(hw);
            let outputs: Vec<(&str, Vec<f64>, Vec<f64>)> = if bias {
                vec![("weight", got_w, want_w), ("bias", read(hb), want_b)]
            } else {
                vec![("weight", got_w, want_w)]
            };
            for (name, got, want) in outputs {
                assert!(
                    got.iter().all(|v| v.is_finite()),
                    "{problem:?}: {name} gradient unwritten"
                );
                let e = match (batch, name) {
                    (0, _) => got.iter().map(|v| v.abs()).fold(0.0, f64::max),
                    // A bias gradient sums g over samples and points, which
                    // can cancel to near zero: its error against Σ|g|.
                    (_, "bias") => (0..cout)
                        .map(|o| {
                            let terms = (0..batch).flat_map(|b| &g[(b * cout + o) * points..][..points]);
                            (got[o] - want[o]).abs() / terms.map(|v| v.abs() as f64).sum::<f64>()
                        })
                        .fold(0.0, f64::max),
                    _ => relative_l2(&got, &want),
                };
                assert!(
                    e < 1e-5,
                    "{precision} {problem:?} ({:?}): {name} gradient error {e:e} (seed {seed})",
                    problem.config()
                );
            }
            sliced |= problem.config().slice < points;
        }
    }
    assert!(sliced, "no case split its points among cubes");
}
