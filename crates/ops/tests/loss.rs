//! The loss norms (`loss_norms`, the squared norms of relative L2 and H1
//! losses) on wgpu (lavapipe in CI) against the same maths in Burn's ops on
//! ndarray in f64: values and the gradients of both operands, tracked
//! together or alone, on 1-, 2- and 3-axis grids (one with rows summed by
//! several cubes), with and without the derivative terms; and the f64 path
//! against central differences.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_ops::{loss_norms, PointwiseBackend};
use fno_testing::{fresh_seed, relative_l2, uniform};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Exact = NdArray<f64>;

fn to_vec<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

/// `Σ r ⊙ loss_norms(x, y)` on `B`: the norms and the gradients of the tracked operands.
fn norms_and_grads<B: PointwiseBackend + AutodiffBackend, const D: usize>(
    (x, y, r): (&[f64], &[f64], &[f64]),
    shape: [usize; D],
    derivatives: bool,
    tracked: [bool; 2],
) -> (Vec<f64>, [Option<Vec<f64>>; 2]) {
    let device = Default::default();
    let input = |v: &[f64], track: bool| {
        let t = Tensor::<B, D>::from_data(TensorData::new(v.to_vec(), shape), &device);
        if track {
            t.require_grad()
        } else {
            t
        }
    };
    let (x, y) = (input(x, tracked[0]), input(y, tracked[1]));
    let rows = shape[0] * shape[1];
    let r = Tensor::<B, 2>::from_data(TensorData::new(r.to_vec(), [2, rows]), &device);
    let norms = loss_norms(x.clone(), y.clone(), derivatives);
    let grads = (norms.clone() * r).sum().backward();
    let grad = |t: &Tensor<B, D>| t.grad(&grads).map(to_vec);
    (to_vec(norms.inner()), [grad(&x), grad(&y)])
}

fn check<const D: usize>(shape: [usize; D], seed: u64) {
    let len: usize = shape.iter().product();
    let rows = shape[0] * shape[1];
    let (x, y, r) = (uniform(len, seed), uniform(len, seed + 1), uniform(2 * rows, seed + 2));
    for derivatives in [false, true] {
        for tracked in [[true, true], [true, false]] {
            let ops = (&x[..], &y[..], &r[..]);
            let (got, got_grads) = norms_and_grads::<Autodiff<Wgpu>, D>(ops, shape, derivatives, tracked);
            let (want, want_grads) = norms_and_grads::<Autodiff<Exact>, D>(ops, shape, derivatives, tracked);
            let what = format!("{shape:?}, derivatives {derivatives}, tracked {tracked:?} (seed {seed})");
            let e = relative_l2(&got, &want);
            assert!(e < 1e-5, "{what}: norms off by {e:e}");
            for (k, name) in ["x", "y"].into_iter().enumerate() {
                assert_eq!(
                    got_grads[k].is_some(),
                    tracked[k],
                    "{what}: {name} gradient present iff tracked"
                );
                if let (Some(got), Some(want)) = (&got_grads[k], &want_grads[k]) {
                    let e = relative_l2(got, want);
                    assert!(e < 1e-5, "{what}: {name} gradient off by {e:e}");
                }
            }
        }
    }
}

#[test]
fn loss_norms_and_their_gradients_match_f64() {
    let seed = fresh_seed();
    println!("seed {seed}");
    check([3, 2, 37], seed);
    check([2, 1, 80, 96], seed + 10);
    check([2, 2, 3, 5, 6], seed + 20);
}

#[test]
fn loss_norm_gradients_match_central_differences() {
    let seed = fresh_seed();
    println!("seed {seed}");
    let shape = [1, 2, 5, 4];
    let len = 40;
    let (x, y, r) = (uniform(len, seed), uniform(len, seed + 1), uniform(4, seed + 2));
    let (_, [gx, gy]) = norms_and_grads::<Autodiff<Exact>, 4>((&x, &y, &r), shape, true, [true, true]);
    let objective = |x: &[f64], y: &[f64]| {
        let (n, _) = norms_and_grads::<Autodiff<Exact>, 4>((x, y, &r), shape, true, [false, false]);
        n.iter().zip(&r).map(|(n, r)| n * r).sum::<f64>()
    };
    let h = 1e-6;
    for i in [0, 13, 39] {
        for (which, grad) in [(0, gx.as_ref().unwrap()), (1, gy.as_ref().unwrap())] {
            let (mut xp, mut yp, mut xm, mut ym) = (x.clone(), y.clone(), x.clone(), y.clone());
            let (p, m) = if which == 0 {
                (&mut xp, &mut xm)
            } else {
                (&mut yp, &mut ym)
            };
            p[i] += h;
            m[i] -= h;
            let fd = (objective(&xp, &yp) - objective(&xm, &ym)) / (2.0 * h);
            assert!(
                (fd - grad[i]).abs() < 1e-6 * (1.0 + fd.abs()),
                "operand {which}, {i}: {fd} vs {}",
                grad[i]
            );
        }
    }
}
