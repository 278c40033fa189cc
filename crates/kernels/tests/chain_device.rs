//! The chain of three complex products on wgpu (lavapipe in CI) against its
//! f64 oracle: a Tucker contraction (a shared factor, a per-mode core, a
//! transposed shared factor) with a bias at one mode, and its adjoint chain
//! (conjugated, transposed) with the input's sum at one mode; batches and
//! modes that leave partial tiles, steps wider than one pass of the threads;
//! the kept results. Outputs start as NaN.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::cgemm::{ChainBuffers, ChainProblem, ChainStep, ModeBias, Strides};
use fno_testing::oracle;
use fno_testing::{fresh_seed, relative_l2, uniform_f32};

/// `x·U₀ → ·C_k → ·U₁ᵀ` for `U₀: [c0, r0]`, `C: [r0, r1, K]`, `U₁: [c3, r1]`;
/// `adjoint`: `g·conj(U₁) → ·C_kᴴ → ·U₀ᴴ` from `c3` channels back to `c0`.
fn tucker(batch: usize, [c0, r0, r1, c3]: [usize; 4], modes: usize, adjoint: bool) -> ChainProblem {
    let s = |row, col, mode| Strides { row, col, mode };
    let step = |outputs, strides, conj| ChainStep { outputs, strides, conj };
    let at = ModeBias {
        mode: modes / 2,
        factor: 1.5,
    };
    if adjoint {
        ChainProblem {
            batch,
            inputs: c3,
            modes,
            steps: [
                step(r1, s(r1, 1, 0), true),
                step(r0, s(1, r1 * modes, modes), true),
                step(c0, s(1, r0, 0), true),
            ],
            bias: None,
            keep: true,
            input_sum: Some(at),
        }
    } else {
        ChainProblem {
            batch,
            inputs: c0,
            modes,
            steps: [
                step(r0, s(r0, 1, 0), false),
                step(r1, s(r1 * modes, modes, 1), false),
                step(c3, s(1, r1, 0), false),
            ],
            bias: Some(at),
            keep: true,
            input_sum: None,
        }
    }
}

#[test]
fn chains_match_the_oracle() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let cases = [
        (3, [4, 3, 2, 5], 6),
        (37, [24, 7, 5, 24], 9),
        (70, [64, 40, 33, 48], 3),
        (2, [130, 9, 11, 3], 4),
        // More columns than one pass of the threads covers (128).
        (3, [8, 130, 5, 200], 5),
    ];
    for (i, &(batch, channels, modes)) in cases.iter().enumerate() {
        for adjoint in [false, true] {
            let problem = tucker(batch, channels, modes, adjoint);
            let seed = seed + 2 * i as u64 + adjoint as u64;
            let c = problem.channels();
            let draw = |len: usize, s: u64| uniform_f32(len, seed.wrapping_mul(7).wrapping_add(s));
            let x = draw(2 * batch * c[0] * modes, 1);
            let weights: Vec<Vec<f32>> = (0..3)
                .map(|w| draw(2 * problem.weight_extent(w), 2 + w as u64))
                .collect();
            let bias = draw(c[3], 5);
            let wide = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
            let (want_y, want_kept, want_sum) = oracle::chain(
                &problem,
                &wide(&x),
                [&wide(&weights[0]), &wide(&weights[1]), &wide(&weights[2])],
                &wide(&bias),
            );
            let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
            let poisoned = |len: usize| upload(&vec![f32::NAN; len]);
            let tiles = problem.tiles();
            let (y, kept1, kept2, sum) = (
                poisoned(want_y.len()),
                poisoned(want_kept[0].len()),
                poisoned(want_kept[1].len()),
                poisoned(tiles * c[0]),
            );
            let (xh, w0, w1, w2, bh) = (
                upload(&x),
                upload(&weights[0]),
                upload(&weights[1]),
                upload(&weights[2]),
                upload(&bias),
            );
            problem.launch(
                &client,
                ChainBuffers {
                    x: &xh,
                    weights: [&w0, &w1, &w2],
                    bias: &bh,
                    y: &y,
                    kept: [&kept1, &kept2],
                    input_sum: &sum,
                },
            );
            let read = |h| wide(f32::from_bytes(&client.read_one(h).unwrap()));
            let check = |name: &str, got: Vec<f64>, want: &[f64]| {
                let e = relative_l2(&got, want);
                assert!(
                    e < 1e-5,
                    "{name} of {problem:?} ({:?}): error {e:e} (seed {seed})",
                    problem.config()
                );
            };
            check("Y", read(y), &want_y);
            check("first result", read(kept1), &want_kept[0]);
            check("second result", read(kept2), &want_kept[1]);
            if adjoint {
                let partial = read(sum);
                let summed: Vec<f64> = (0..c[0])
                    .map(|ch| (0..tiles).map(|t| partial[t * c[0] + ch]).sum())
                    .collect();
                check("input sum", summed, &want_sum);
            }
        }
    }
}
