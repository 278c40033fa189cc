//! `precise_matmul` on wgpu (lavapipe in CI) against Burn's matmul on ndarray in
//! f64: stacks of matrices with one side repeated over the other's batch,
//! transposed and narrowed views (strides and offsets the kernel must honour),
//! 2 to 4 dims; and its gradients under Autodiff, each operand's on its own and
//! both together.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_ops::{precise_matmul, PreciseMatmulBackend};
use fno_testing::uniform_f32;

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Exact = NdArray<f64>;

fn to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

fn rel_l2(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    let num: f64 = got.iter().zip(want).map(|(g, w)| (g - w).powi(2)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den).sqrt()
}

/// How an operand reaches the product: as stored, as the transpose of a stored
/// `[.., cols, rows]`, or as a narrowed slice (offset into its buffer) of a
/// stored stack one matrix longer in dim 0.
#[derive(Clone, Copy, Debug)]
enum View {
    Dense,
    Transposed,
    Narrowed,
}

fn values(shape: &[usize], view: View, seed: u64) -> (Vec<f64>, Vec<usize>) {
    let mut stored = shape.to_vec();
    let d = shape.len();
    match view {
        View::Dense => {}
        View::Transposed => stored.swap(d - 2, d - 1),
        View::Narrowed => stored[0] += 1,
    }
    let n: usize = stored.iter().product();
    (uniform_f32(n, seed).into_iter().map(f64::from).collect(), stored)
}

fn operand<B: Backend, const D: usize>(v: &[f64], stored: &[usize], view: View) -> Tensor<B, D> {
    let t = Tensor::<B, D>::from_data(TensorData::new(v.to_vec(), stored.to_vec()), &Default::default());
    match view {
        View::Dense => t,
        View::Transposed => t.swap_dims(D - 2, D - 1),
        View::Narrowed => t.narrow(0, 1, stored[0] - 1),
    }
}

fn check_forward<const D: usize>(lhs: [usize; D], rhs: [usize; D], views: (View, View), seed: u64) -> f64 {
    let (a, sa) = values(&lhs, views.0, seed);
    let (b, sb) = values(&rhs, views.1, seed + 1);
    let got = to_vec(precise_matmul(
        operand::<Wgpu, D>(&a, &sa, views.0),
        operand::<Wgpu, D>(&b, &sb, views.1),
    ));
    let want = to_vec(operand::<Exact, D>(&a, &sa, views.0).matmul(operand::<Exact, D>(&b, &sb, views.1)));
    rel_l2(&got, &want)
}

#[test]
fn products_match_f64() {
    use View::*;
    let mut worst: f64 = 0.0;
    let mut record = |e: f64, what: &str| {
        assert!(e < 1e-6, "{what}: relative L2 {e:e}");
        worst = worst.max(e);
    };
    for (i, views) in [
        (Dense, Dense),
        (Transposed, Dense),
        (Dense, Transposed),
        (Narrowed, Transposed),
    ]
    .into_iter()
    .enumerate()
    {
        let seed = 10 * i as u64;
        for (lhs, rhs) in [
            ([4, 5, 7], [4, 7, 9]),
            // A 1×1 convolution: one weight against every sample's channels.
            ([1, 24, 3], [6, 3, 256]),
            ([5, 33, 17], [1, 17, 2]),
            ([3, 1, 65], [3, 65, 1]),
        ] {
            // A narrowed operand needs a batch to narrow.
            let lhs_view = if lhs[0] == 1 { Dense } else { views.0 };
            record(
                check_forward(lhs, rhs, (lhs_view, views.1), seed),
                &format!("{lhs:?}·{rhs:?} {views:?}"),
            );
        }
        record(
            check_forward([2, 3, 4, 5], [2, 3, 5, 6], views, seed),
            &format!("4D {views:?}"),
        );
    }
    record(check_forward([130, 5], [5, 40], (Dense, Dense), 99), "2D");
    record(
        check_forward([64, 96], [96, 17], (Transposed, Dense), 98),
        "2D transposed",
    );
    println!("precise_matmul: worst relative L2 error {worst:.2e}");
}

/// Gradients of `Σ r ⊙ (lhs·rhs)` with respect to the operands that require them.
fn grads<B: PreciseMatmulBackend + burn::tensor::backend::AutodiffBackend>(
    a: (&[f64], [usize; 3]),
    b: (&[f64], [usize; 3]),
    r: (&[f64], [usize; 3]),
    tracked: (bool, bool),
    precise: bool,
) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
    let device = Default::default();
    let t = |(v, s): (&[f64], [usize; 3])| Tensor::<B, 3>::from_data(TensorData::new(v.to_vec(), s), &device);
    let (mut lhs, mut rhs) = (t(a), t(b));
    if tracked.0 {
        lhs = lhs.require_grad();
    }
    if tracked.1 {
        rhs = rhs.require_grad();
    }
    let y = if precise {
        precise_matmul(lhs.clone(), rhs.clone())
    } else {
        lhs.clone().matmul(rhs.clone())
    };
    let g = (y * t(r)).sum().backward();
    let grad = |x: &Tensor<B, 3>| x.grad(&g).map(to_vec);
    (grad(&lhs), grad(&rhs))
}

#[test]
fn gradients_match_f64() {
    for (seed, (lhs, rhs)) in [([1, 8, 5], [4, 5, 33]), ([3, 6, 7], [3, 7, 4]), ([2, 9, 3], [1, 3, 5])]
        .into_iter()
        .enumerate()
    {
        let out = [lhs[0].max(rhs[0]), lhs[1], rhs[2]];
        let seed = 100 + 10 * seed as u64;
        let v = |s: [usize; 3], seed| -> Vec<f64> {
            uniform_f32(s.iter().product(), seed)
                .into_iter()
                .map(f64::from)
                .collect()
        };
        let (a, b, r) = (v(lhs, seed), v(rhs, seed + 1), v(out, seed + 2));
        for tracked in [(true, true), (true, false), (false, true)] {
            let got = grads::<Autodiff<Wgpu>>((&a, lhs), (&b, rhs), (&r, out), tracked, true);
            let want = grads::<Autodiff<Exact>>((&a, lhs), (&b, rhs), (&r, out), tracked, false);
            for (name, got, want, on) in [("lhs", got.0, want.0, tracked.0), ("rhs", got.1, want.1, tracked.1)] {
                assert_eq!(got.is_some(), on, "{name} gradient present iff tracked");
                if let (Some(got), Some(want)) = (got, want) {
                    let e = rel_l2(&got, &want);
                    assert!(e < 1e-6, "{lhs:?}·{rhs:?} {tracked:?}: {name} gradient {e:e}");
                }
            }
        }
    }
}
