//! The batched CGEMM kernel on wgpu (lavapipe in CI) against its f64 oracle, in
//! the three shapes a spectral convolution uses, per-mode and shared weights,
//! with dense and row-padded weights and with and without a per-mode output scale and a bias on one mode; shapes cover partial blocks on
//! every side, one-wide sides, chunks of `r` that do not divide evenly and a
//! long reduction split among cubes; and
//! the real variant as stacked matrix products, transposed and broadcast.

use cubecl::prelude::*;
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use fno_kernels::cgemm::real::{self, MatrixStrides};
use fno_kernels::cgemm::{spectral, CgemmProblem, ModeBias, OperandPrecisions, Strides};
use fno_kernels::limits::DeviceLimits;
use fno_kernels::precision::Precision;
use fno_testing::oracle;
use fno_testing::uniform_f32;

/// Relative L2 error of `problem` on the device against its f64 oracle of
/// the operands as stored (rounded to their precisions).
fn check<R: Runtime>(client: &ComputeClient<R>, problem: &CgemmProblem, seed: u64) -> f64 {
    let (ea, eb, ec) = problem.extents();
    let width = if problem.complex { 2 } else { 1 };
    let precisions = problem.precisions;
    let [sa, sb, sc] = [precisions.a, precisions.b, precisions.c].map(|p| p.stored_on(client));
    let a = sa.round(&uniform_f32(width * ea, seed));
    let b = sb.round(&uniform_f32(width * eb, seed + 1));
    let bias = uniform_f32(problem.q, seed + 2);
    let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let want = oracle::cgemm(problem, &f64s(&a), &f64s(&b), Some(&f64s(&bias)));
    let ha = client.create_from_slice(&sa.encode(&a));
    let hb = client.create_from_slice(&sb.encode(&b));
    let hc = client.create_from_slice(&sc.encode(&vec![f32::NAN; width * ec]));
    if problem.bias.is_some() {
        let hbias = client.create_from_slice(f32::as_bytes(&bias));
        problem.launch_biased(client, &ha, &hb, &hc, &hbias);
    } else {
        problem.launch(client, &ha, &hb, &hc);
    }
    let got = sc.decode(&client.read_one(hc).unwrap());
    assert!(got.iter().all(|v| v.is_finite()), "{problem:?}: unwritten output");
    let num: f64 = got.iter().zip(&want).map(|(g, w)| (*g as f64 - w).powi(2)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den).sqrt()
}

#[test]
fn spectral_contractions_match_the_oracle() {
    spectral_contractions(&WgpuRuntime::client(&WgpuDevice::default()));
}

/// The same on CUDA, whose launches stage operands by asynchronous copies into
/// two buffers (wgpu has none): run on a GPU machine with `--ignored`.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn spectral_contractions_match_the_oracle_on_cuda() {
    let client = crate::cuda_client_with_async_copies();
    spectral_contractions(&client);
}

fn spectral_contractions<R: Runtime>(client: &ComputeClient<R>) {
    let mut worst: f64 = 0.0;
    let mut split = false;
    for (seed, &(batch, cin, cout, modes)) in [
        (1, 3, 5, 7),
        (6, 4, 4, 130),
        (16, 8, 3, 33),
        (2, 1, 1, 1),
        (5, 17, 9, 65),
        (37, 20, 11, 9),
        (1, 64, 70, 5),
        (70, 3, 33, 3),
        // A long batch reduction into few outputs: the weight gradient splits it.
        (3000, 3, 2, 3),
    ]
    .iter()
    .enumerate()
    {
        let seed = seed as u64 * 10;
        let dense = spectral::dense_weight(cout, modes, false);
        let shared = spectral::dense_weight(cout, modes, true);
        // Rows of (re, im) padded to 16 bytes, as Burn's CUDA allocator pitches them.
        let padded = Strides {
            row: 2 * dense.row,
            col: 2 * dense.col,
            mode: 2,
        };
        for problem in [
            spectral::forward(batch, cin, cout, modes, dense),
            spectral::grad_input(batch, cin, cout, modes, dense),
            spectral::grad_weight(batch, cin, cout, modes),
            spectral::forward(batch, cin, cout, modes, shared),
            spectral::grad_input(batch, cin, cout, modes, shared),
            spectral::forward(batch, cin, cout, modes, padded),
            spectral::grad_input(batch, cin, cout, modes, padded),
        ] {
            let scaled = CgemmProblem {
                mode_scale: (0..modes.min(4)).map(|i| 0.5 + i as f32).collect(),
                ..problem.clone()
            };
            // The spectral convolution's bias at its DC mode, after the scale.
            let biased = CgemmProblem {
                bias: Some(ModeBias {
                    mode: modes / 2,
                    factor: 1.75,
                }),
                ..scaled.clone()
            };
            for problem in [problem, scaled, biased] {
                let e = check(client, &problem, seed);
                assert!(
                    e < 1e-5,
                    "{problem:?} ({:?}): {e:e}",
                    problem.config(&DeviceLimits::of(client))
                );
                worst = worst.max(e);
                split |= problem.config(&DeviceLimits::of(client)).splits > 1;
            }
        }
    }
    assert!(split, "no case split its reduction");
    println!("cgemm: worst relative L2 error {worst:.2e}");
}

/// Weight gradients summed over the modes (a weight shared by every mode),
/// written transposed or row-padded as a factor's stored layout is: against
/// the per-mode oracle's sum, unsplit and split, with a per-mode scale.
#[test]
fn mode_sums_match_the_summed_oracle() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    let seed = fno_testing::fresh_seed();
    println!("seed {seed}");
    let mut split = false;
    for (i, &(batch, cin, cout, modes)) in [(4, 5, 3, 7), (2, 17, 9, 33), (3000, 3, 2, 3), (1, 1, 1, 1)]
        .iter()
        .enumerate()
    {
        let per_mode = CgemmProblem {
            mode_scale: vec![0.5, 1.5],
            ..spectral::grad_weight(batch, cin, cout, modes)
        };
        let (ea, eb, _) = per_mode.extents();
        let a = uniform_f32(2 * ea, seed + 10 * i as u64);
        let b = uniform_f32(2 * eb, seed + 10 * i as u64 + 1);
        let f64s = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<_>>();
        let products = oracle::cgemm(&per_mode, &f64s(&a), &f64s(&b), None);
        let (ha, hb) = (
            client.create_from_slice(f32::as_bytes(&a)),
            client.create_from_slice(f32::as_bytes(&b)),
        );
        let layouts = [
            Strides {
                row: 1,
                col: cin,
                mode: 0,
            },
            Strides {
                row: cout + 3,
                col: 1,
                mode: 0,
            },
        ];
        for c in layouts {
            let problem = CgemmProblem { c, ..per_mode.clone() };
            let extent = c.row * (cin - 1) + c.col * (cout - 1) + 1;
            let hc = client.create_from_slice(f32::as_bytes(&vec![f32::NAN; 2 * extent]));
            problem.launch_mode_sum(&client, &ha, &hb, &hc);
            let got = client.read_one(hc).unwrap();
            let got = f32::from_bytes(&got);
            let (mut num, mut den) = (0.0, 0.0);
            for p in 0..cin {
                for q in 0..cout {
                    let at = 2 * (p * c.row + q * c.col);
                    for part in 0..2 {
                        let want: f64 = (0..modes)
                            .map(|k| products[2 * ((p * cout + q) * modes + k) + part])
                            .sum();
                        num += (got[at + part] as f64 - want).powi(2);
                        den += want * want;
                    }
                }
            }
            let e = (num / den).sqrt();
            assert!(e < 1e-5, "{problem:?} (seed {seed}): {e:e}");
            split |= problem.config(&DeviceLimits::of(&client)).splits > 1;
        }
    }
    assert!(split, "no case split its reduction");
}

#[test]
fn real_matrix_products_match_the_oracle() {
    let client = WgpuRuntime::client(&WgpuDevice::default());
    // Row-major or transposed storage of a stack of `rows × cols` matrices.
    let stack = |batch: usize, rows: usize, cols: usize, transposed: bool| MatrixStrides {
        batch: if batch == 1 { 0 } else { rows * cols },
        row: if transposed { 1 } else { cols },
        col: if transposed { rows } else { 1 },
    };
    let mut worst: f64 = 0.0;
    for (seed, &(batch, m, k, n)) in [
        (1, 5, 7, 9),
        (4, 24, 3, 256),
        (3, 1, 33, 17),
        (8, 64, 64, 100),
        (2, 130, 5, 1),
    ]
    .iter()
    .enumerate()
    {
        for (lhs_batch, rhs_batch) in [(batch, batch), (1, batch), (batch, 1)] {
            for (lt, rt) in [(false, false), (true, false), (false, true), (true, true)] {
                let problem = real::matmul(batch, m, k, n, stack(lhs_batch, m, k, lt), stack(rhs_batch, k, n, rt));
                let e = check(&client, &problem, 100 + seed as u64);
                assert!(
                    e < 1e-5,
                    "{problem:?} ({:?}): {e:e}",
                    problem.config(&DeviceLimits::of(&client))
                );
                worst = worst.max(e);
            }
        }
    }
    println!("real matmul: worst relative L2 error {worst:.2e}");
}

/// The precisions a mixed-precision spectral convolution gives its three
/// contractions: spectra in `half`, the weight and its gradient in f32.
fn mixed_precisions(half: Precision) -> [OperandPrecisions; 4] {
    let f32 = Precision::F32;
    [
        OperandPrecisions::all(half),
        OperandPrecisions {
            a: half,
            b: f32,
            c: half,
        },
        OperandPrecisions {
            a: half,
            b: half,
            c: f32,
        },
        OperandPrecisions {
            a: f32,
            b: f32,
            c: half,
        },
    ]
}

/// Half-precision operands, f32 sums: within a few of the output's unit
/// round-offs of the oracle of the stored operands, and as exact as f32 where
/// the output is f32 (a long reduction summed in half would not be).
pub(crate) fn half_contractions<R: Runtime>(client: &ComputeClient<R>) {
    for half in [Precision::F16, Precision::BF16] {
        let mut worst: f64 = 0.0;
        for (seed, &(batch, cin, cout, modes)) in [(5, 17, 9, 65), (1, 64, 70, 5), (3000, 3, 2, 3)].iter().enumerate() {
            let dense = spectral::dense_weight(cout, modes, false);
            for precisions in mixed_precisions(half) {
                for problem in [
                    spectral::forward(batch, cin, cout, modes, dense),
                    spectral::grad_input(batch, cin, cout, modes, dense),
                    spectral::grad_weight(batch, cin, cout, modes),
                ] {
                    let problem = CgemmProblem {
                        precisions,
                        mode_scale: vec![0.5, 2.0],
                        ..problem
                    };
                    let e = check(client, &problem, 300 + seed as u64);
                    let bound = (3.0 * precisions.c.unit_roundoff()).max(1e-5);
                    assert!(
                        e < bound,
                        "{half} {problem:?} ({:?}): {e:e} > {bound:e}",
                        problem.config(&DeviceLimits::of(client))
                    );
                    worst = worst.max(e);
                }
            }
        }
        println!("cgemm {half}: worst relative L2 error {worst:.2e}");
    }
}

#[test]
fn half_precision_contractions_match_the_oracle() {
    half_contractions(&WgpuRuntime::client(&WgpuDevice::default()));
}

/// The same on CUDA: native bf16 buffers, half pairs staged by asynchronous copies.
#[cfg(feature = "cuda")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn half_precision_contractions_match_the_oracle_on_cuda() {
    half_contractions(&crate::cuda_client_with_async_copies());
}
