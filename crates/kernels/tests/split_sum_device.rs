//! The split reductions' second pass on wgpu (lavapipe in CI) against its f64
//! oracle: one split to many, splits that fill no round of four, complex
//! elements at strided positions; elements off the strides stay untouched.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::cgemm::Strides;
use fno_kernels::split_sum::SplitSumProblem;
use fno_testing::oracle;
use fno_testing::{fresh_seed, relative_l2, uniform_f32};

#[test]
fn split_sums_match_the_oracle_and_write_only_their_elements() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fresh_seed();
    println!("seed {seed}");
    let dense = |q: usize| Strides {
        row: q,
        col: 1,
        mode: 0,
    };
    for (case, problem) in [
        (1, 1, 1, 1, dense(1)),
        (512, 64, 64, 1, dense(64)),
        (512, 64, 1, 1, dense(1)),
        (37, 5, 7, 1, dense(7)),
        (
            6,
            3,
            4,
            5,
            Strides {
                row: 2,
                col: 9,
                mode: 40,
            },
        ),
        (
            130,
            2,
            3,
            2,
            Strides {
                row: 1,
                col: 2,
                mode: 8,
            },
        ),
    ]
    .into_iter()
    .enumerate()
    .flat_map(|(i, (splits, p, q, k, strides))| {
        [1, 2].map(|width| {
            (
                i,
                SplitSumProblem {
                    splits,
                    p,
                    q,
                    k,
                    width,
                    strides,
                },
            )
        })
    }) {
        let seed = seed + case as u64;
        let values = problem.p * problem.q * problem.k * problem.width;
        let partial = uniform_f32(problem.splits * values, seed);
        let want = oracle::split_sum(&problem, &partial.iter().map(|&v| v as f64).collect::<Vec<_>>());
        let c = client.create_from_slice(f32::as_bytes(&vec![f32::NAN; want.len()]));
        problem.launch(&client, &client.create_from_slice(f32::as_bytes(&partial)), &c);
        let got = f32::from_bytes(&client.read_one(c).unwrap()).to_vec();
        // The oracle's zeros mark the elements off the strides: still NaN here.
        let written: Vec<bool> = {
            let mut mask = vec![false; want.len()];
            let p = SplitSumProblem { splits: 1, ..problem };
            let ones = oracle::split_sum(&p, &vec![1.0; values]);
            mask.iter_mut().zip(&ones).for_each(|(m, &o)| *m = o == 1.0);
            mask
        };
        let (mut g, mut w) = (Vec::new(), Vec::new());
        for ((&got, &want), &on) in got.iter().zip(&want).zip(&written) {
            if on {
                g.push(got as f64);
                w.push(want);
            } else {
                assert!(got.is_nan(), "{problem:?}: wrote off its strides");
            }
        }
        assert_eq!(g.len(), values, "{problem:?}");
        let e = relative_l2(&g, &w);
        assert!(
            e < 1e-6,
            "{problem:?} ({:?}): error {e:e} (seed {seed})",
            problem.config()
        );
    }
}
