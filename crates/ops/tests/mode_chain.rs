//! Chains of three mode mixes (`fno_ops::mode_mix_chain`: one launch on
//! wgpu, with its own backward) against the same three `mode_mix`es and a
//! bias added by Burn ops, differentiated by autodiff on ndarray f64: the
//! output and the gradients of the input, each weight and the bias. The chain
//! mixes a weight shared by every mode, a per-mode one contracted as
//! `GradInput` (conjugated, transposed) and a transposed view; a second
//! chain is too wide for the kernel's shared tiles and runs step by step.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burn_cubecl::CubeBackend;
use cubecl::wgpu::WgpuRuntime;
use fno_kernels::cgemm::ModeBias;
use fno_ops::{mode_mix, mode_mix_chain, ModeMix, ModeMixBackend};
use fno_testing::{fresh_seed, relative_l2, uniform};

type Wgpu = CubeBackend<WgpuRuntime, f32, i32, u32>;
type Exact = Autodiff<NdArray<f64>>;

const MIXES: [ModeMix; 3] = [ModeMix::Forward, ModeMix::GradInput, ModeMix::Forward];

/// `x: [B, c0, K]`, `w1: [c0, c1]` shared, `w2: [c2, c1, K]` (contracted as
/// `GradInput`), `w3` stored `[c3, c2]` and used transposed, `bias: [c3]`.
struct Case {
    batch: usize,
    channels: [usize; 4],
    modes: usize,
}

impl Case {
    fn shapes(&self) -> [[usize; 4]; 4] {
        let ([c0, c1, c2, c3], b, k) = (self.channels, self.batch, self.modes);
        [[b, c0, k, 2], [c0, c1, 1, 2], [c2, c1, k, 2], [c3, c2, 1, 2]]
    }
}

fn tensor<B: Backend, const D: usize>(v: &[f64], shape: [usize; D]) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), &Default::default())
}

fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec::<f64>().unwrap()
}

/// The output and the gradients of `Σ r ⊙ y` (x, the three weights, the
/// bias), through the chain or step by step.
fn run<B: AutodiffBackend + ModeMixBackend>(case: &Case, data: &[Vec<f64>; 6], chained: bool) -> Vec<Vec<f64>> {
    let shapes = case.shapes();
    let at = ModeBias {
        mode: case.modes / 2,
        factor: 1.5,
    };
    let inputs: Vec<Tensor<B, 4>> = (0..4)
        .map(|i| tensor::<B, 4>(&data[i], shapes[i]).require_grad())
        .collect();
    let bias = tensor::<B, 1>(&data[4], [case.channels[3]]).require_grad();
    let weights = [inputs[1].clone(), inputs[2].clone(), inputs[3].clone().swap_dims(0, 1)];
    let y = if chained {
        mode_mix_chain(inputs[0].clone(), weights, MIXES, Some((bias.clone(), at)))
    } else {
        let y = weights
            .into_iter()
            .zip(MIXES)
            .fold(inputs[0].clone(), |t, (w, mix)| mode_mix(t, w, mix));
        let mut one_hot = vec![0.0; 2 * case.modes];
        one_hot[2 * at.mode] = at.factor as f64;
        let one_hot = tensor::<B, 4>(&one_hot, [1, 1, case.modes, 2]);
        y + bias.clone().reshape([1, case.channels[3] as i32, 1, 1]) * one_hot
    };
    let grads = (y.clone() * tensor::<B, 4>(&data[5], y.dims())).sum().backward();
    let mut out = vec![values(y)];
    out.extend(inputs.iter().map(|t| values(t.grad(&grads).expect("a gradient"))));
    out.push(values(bias.grad(&grads).expect("the bias's gradient")));
    out
}

#[test]
fn chains_and_their_gradients_match_the_steps() {
    let seed = fresh_seed();
    let cases = [
        Case {
            batch: 5,
            channels: [4, 6, 5, 8],
            modes: 7,
        },
        // Wider than the kernel's shared tiles: the steps one by one.
        Case {
            batch: 2,
            channels: [2100, 3, 2, 4],
            modes: 3,
        },
    ];
    for (i, case) in cases.iter().enumerate() {
        let seed = seed + 10 * i as u64;
        let shapes = case.shapes();
        let len = |s: &[usize]| s.iter().product::<usize>();
        let out_len = case.batch * case.channels[3] * case.modes * 2;
        let data: [Vec<f64>; 6] = [
            uniform(len(&shapes[0]), seed),
            uniform(len(&shapes[1]), seed + 1),
            uniform(len(&shapes[2]), seed + 2),
            uniform(len(&shapes[3]), seed + 3),
            uniform(case.channels[3], seed + 4),
            uniform(out_len, seed + 5),
        ];
        let want = run::<Exact>(case, &data, false);
        for (backend, got, bound) in [
            ("ndarray f64", run::<Exact>(case, &data, true), 1e-12),
            ("wgpu", run::<Autodiff<Wgpu>>(case, &data, true), 1e-5),
        ] {
            for (name, (g, w)) in ["y", "∂x", "∂w1", "∂w2", "∂w3", "∂bias"]
                .iter()
                .zip(got.iter().zip(&want))
            {
                let e = relative_l2(g, w);
                println!("{backend} case {i} {name}: error {e:.2e} (seed {seed})");
                assert!(e < bound, "{backend} case {i} {name}: error {e:e} (seed {seed})");
            }
        }
    }
}
