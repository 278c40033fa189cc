//! The per-mode channel mixes (`fno_ops::mode_mix`) on wgpu (one CGEMM
//! launch, lavapipe in CI) and on ndarray f64 (Burn's matmuls) against
//! explicit complex sums in f64, each of the three contractions (operands
//! with padded pairs, as on CUDA), and their
//! gradients: the mixes are bilinear, so `⟨∂L/∂a, δa⟩` must equal
//! `L(a + δa, b) − L(a, b)` exactly for `L = Σ r ⊙ mix(a, b)`.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_ops::{mode_mix, ModeMix, ModeMixBackend};
use fno_testing::{fresh_seed, relative_l2, uniform};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Exact = NdArray<f64>;

const BATCH: usize = 3;
const CIN: usize = 4;
const COUT: usize = 5;
const MODES: usize = 7;

/// The operands' and the result's shapes of `mix`.
fn shapes(mix: ModeMix) -> [[usize; 4]; 3] {
    let (x, w, y) = ([BATCH, CIN, MODES, 2], [CIN, COUT, MODES, 2], [BATCH, COUT, MODES, 2]);
    match mix {
        ModeMix::Forward => [x, w, y],
        ModeMix::GradInput => [y, w, x],
        ModeMix::GradWeight => [x, y, w],
    }
}

type C = (f64, f64);

fn at(v: &[f64], shape: [usize; 4], i: usize, j: usize, k: usize) -> C {
    let o = ((i * shape[1] + j) * shape[2] + k) * 2;
    (v[o], v[o + 1])
}

fn mul((a, b): C, (c, d): C) -> C {
    (a * c - b * d, a * d + b * c)
}

fn conj((a, b): C) -> C {
    (a, -b)
}

/// `mix(a, b)` by its definition, in f64.
fn oracle(mix: ModeMix, a: &[f64], b: &[f64]) -> Vec<f64> {
    let [sa, sb, sy] = shapes(mix);
    let mut out = vec![0.0; sy.iter().product()];
    for i in 0..sy[0] {
        for j in 0..sy[1] {
            for k in 0..MODES {
                let mut sum = (0.0, 0.0);
                let inner = match mix {
                    ModeMix::Forward => CIN,
                    ModeMix::GradInput => COUT,
                    ModeMix::GradWeight => BATCH,
                };
                for r in 0..inner {
                    let term = match mix {
                        ModeMix::Forward => mul(at(a, sa, i, r, k), at(b, sb, r, j, k)),
                        ModeMix::GradInput => mul(at(a, sa, i, r, k), conj(at(b, sb, j, r, k))),
                        ModeMix::GradWeight => mul(conj(at(a, sa, r, i, k)), at(b, sb, r, j, k)),
                    };
                    sum = (sum.0 + term.0, sum.1 + term.1);
                }
                let o = ((i * sy[1] + j) * MODES + k) * 2;
                out[o] = sum.0;
                out[o + 1] = sum.1;
            }
        }
    }
    out
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn to_vec<B: Backend>(t: Tensor<B, 4>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

fn tensor<B: Backend>(v: &[f64], shape: [usize; 4]) -> Tensor<B, 4> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), &Default::default())
}

/// `mix(a, b)` and the gradients of `Σ r ⊙ mix(a, b)` on `B`, each operand
/// a view of (re, im) pairs padded with NaN to 16 bytes, as Burn's CUDA
/// allocator pads them (weights are read in place, spectra copied).
fn ours<B: AutodiffBackend + ModeMixBackend>(mix: ModeMix, a: &[f64], b: &[f64], r: &[f64]) -> [Vec<f64>; 3] {
    let [sa, sb, sy] = shapes(mix);
    let padded = |v: &[f64], [d0, d1, d2, _]: [usize; 4]| {
        let v: Vec<f64> = v
            .chunks(2)
            .flat_map(|pair| [pair[0], pair[1], f64::NAN, f64::NAN])
            .collect();
        tensor::<B>(&v, [d0, d1, d2, 4]).require_grad()
    };
    let (pa, pb) = (padded(a, sa), padded(b, sb));
    let y = mode_mix(pa.clone().narrow(3, 0, 2), pb.clone().narrow(3, 0, 2), mix);
    let grads = (y.clone() * tensor::<B>(r, sy)).sum().backward();
    let grad = |t: &Tensor<B, 4>| to_vec(t.grad(&grads).unwrap().narrow(3, 0, 2));
    [to_vec(y), grad(&pa), grad(&pb)]
}

fn check<B: AutodiffBackend + ModeMixBackend>(backend: &str, mix: ModeMix, seed: u64, bound: f64) {
    let [sa, sb, sy] = shapes(mix);
    let len = |s: [usize; 4]| s.iter().product::<usize>();
    let (a, b, r) = (
        uniform(len(sa), seed),
        uniform(len(sb), seed + 1),
        uniform(len(sy), seed + 2),
    );
    let (da, db) = (uniform(len(sa), seed + 3), uniform(len(sb), seed + 4));
    let [y, ga, gb] = ours::<B>(mix, &a, &b, &r);
    let e = relative_l2(&y, &oracle(mix, &a, &b));
    println!("{backend} {mix:?}: values error {e:.2e} (seed {seed})");
    assert!(e < bound, "{backend} {mix:?}: values error {e:e} (seed {seed})");
    // Bilinear: L(a + δa, b) − L(a, b) = L(δa, b), likewise for b.
    for (what, grad, step, want) in [
        ("a", &ga, &da, dot(&r, &oracle(mix, &da, &b))),
        ("b", &gb, &db, dot(&r, &oracle(mix, &a, &db))),
    ] {
        let got = dot(grad, step);
        let e = (got - want).abs() / want.abs().max(1.0);
        println!("{backend} {mix:?}: ⟨∂L/∂{what}, δ{what}⟩ {got:.6} vs {want:.6} (seed {seed})");
        assert!(
            e < bound,
            "{backend} {mix:?}: gradient of {what} off by {e:e} (seed {seed})"
        );
    }
}

#[test]
fn mode_mixes_and_their_gradients_match_explicit_sums() {
    let seed = fresh_seed();
    for mix in [ModeMix::Forward, ModeMix::GradInput, ModeMix::GradWeight] {
        check::<Autodiff<Wgpu>>("wgpu", mix, seed, 1e-5);
        check::<Autodiff<Exact>>("ndarray f64", mix, seed, 1e-12);
    }
}

/// More rows of blocks than a grid's y dimension holds (65,535): the CGEMM
/// folds them into x, and every row is still computed (a shared weight, as the
/// factorized convolution's mode products use: `y[b] = x[b]·w`).
#[test]
fn batches_beyond_the_grids_y_limit_fold_into_x() {
    let seed = fresh_seed();
    let (batch, cout) = (16 * 65_535 + 17, 3);
    let (x, w) = (uniform(2 * batch, seed), uniform(2 * cout, seed + 1));
    let device = Default::default();
    let y = mode_mix(
        Tensor::<Wgpu, 4>::from_data(
            TensorData::new(x.iter().map(|&v| v as f32).collect::<Vec<_>>(), [batch, 1, 1, 2]),
            &device,
        ),
        Tensor::<Wgpu, 4>::from_data(
            TensorData::new(w.iter().map(|&v| v as f32).collect::<Vec<_>>(), [1, cout, 1, 2]),
            &device,
        ),
        ModeMix::Forward,
    );
    let got: Vec<f64> = y.into_data().convert::<f64>().to_vec().unwrap();
    let want: Vec<f64> = (0..batch)
        .flat_map(|b| (0..cout).map(move |o| (b, o)))
        .flat_map(|(b, o)| {
            let (p, q) = mul((x[2 * b], x[2 * b + 1]), (w[2 * o], w[2 * o + 1]));
            [p, q]
        })
        .collect();
    let e = relative_l2(&got, &want);
    println!("{batch} rows: error {e:.2e} (seed {seed})");
    assert!(e < 1e-6, "{batch} rows: error {e:e} (seed {seed})");
}
