//! The loss norms' kernels on wgpu (lavapipe in CI) against their f64
//! oracles: rows of 1-, 2- and 3-axis grids, with and without the derivative
//! terms, rows summed by one cube and by several; the gradient of the
//! difference and of `y` alone, into poisoned outputs.

use cubecl::prelude::*;
use fno_kernels::sobolev::SobolevProblem;
use fno_testing::{fresh_seed, relative_l2, uniform_f32};

use crate::wgpu_client;
use fno_testing::oracle;

#[test]
fn loss_norms_and_their_gradients_match_the_oracle() {
    let client = wgpu_client();
    let seed = fresh_seed();
    println!("seed {seed}");
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let cases: [(usize, &[usize]); 5] = [
        (3, &[37]),
        (2, &[16, 24]),
        (4, &[96, 80]),
        (2, &[6, 5, 7]),
        (1, &[3, 2]),
    ];
    for (i, (rows, grid)) in cases.into_iter().enumerate() {
        for derivatives in [false, true] {
            let p = SobolevProblem::new(rows, grid, derivatives);
            let len = rows * p.points();
            let (x, y) = (
                uniform_f32(len, seed + 2 * i as u64),
                uniform_f32(len, seed + 2 * i as u64 + 1),
            );
            let upload = |v: &[f32]| client.create_from_slice(f32::as_bytes(v));
            let (hx, hy) = (upload(&x), upload(&y));
            let out = upload(&vec![f32::NAN; 2 * rows]);
            let scratch = upload(&vec![f32::NAN; p.scratch_len().max(1)]);
            p.launch(&client, (&hx, &hy), &out, &scratch);
            let got = f64s(f32::from_bytes(&client.read_one(out).unwrap()));
            let want = oracle::sobolev(&p, &f64s(&x), &f64s(&y));
            let err = relative_l2(&got, &want);
            assert!(
                err < 1e-6,
                "{grid:?} ×{rows}, derivatives {derivatives}: norms off by {err:e}"
            );

            let scale: Vec<f32> = (0..rows).map(|r| 0.5 - r as f32).collect();
            let hs = upload(&scale);
            for with_y in [true, false] {
                let g = upload(&vec![f32::NAN; len]);
                p.launch_grad(&client, (&hx, with_y.then_some(&hy)), &hs, &g);
                let got = f64s(f32::from_bytes(&client.read_one(g).unwrap()));
                let y64 = f64s(&y);
                let want = oracle::sobolev_grad(&p, &f64s(&x), with_y.then_some(&y64[..]), &f64s(&scale));
                let err = relative_l2(&got, &want);
                assert!(
                    err < 1e-6,
                    "{grid:?} ×{rows}, derivatives {derivatives}, y {with_y}: gradient off by {err:e}"
                );
            }
        }
    }
}
