//! The per-mode channel mixing of the non-uniform and the factorized spectral
//! convolutions and its two gradients, over spectra `[batch, channels, modes,
//! 2]` (complex pairs, as the NUFFT ops lay them out) and weights `[Cin, Cout,
//! modes, 2]`, or `[Cin, Cout, 1, 2]` shared by every mode: the
//! three contractions of [`fno_kernels::cgemm::spectral`], one CGEMM launch
//! each on `CubeBackend` (no permuted copies), Burn's matmuls elsewhere.
//! Each contraction's gradients are two of the others, so autodiff runs them
//! too (to any order).

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor, TensorMetadata, TensorPrimitive};
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::cgemm::{span, spectral, CgemmProblem, Strides};

use crate::cube_tensor::{cast_to, empty, weight_operand, weight_strides};
use crate::graph::record;
use crate::mode_chain::{autodiff_chain, chain_by_kernel, chain_by_steps, ChainExtras, ChainOutput};
use crate::spectrum::scale_bins;

/// The operands of a contraction's gradients: its two and the output's gradient.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand {
    A,
    B,
    U,
}

/// One of the three contractions, named by what it computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeMix {
    /// `Y[b, o, k] = Σ_i X[b, i, k]·W[i, o, k]` of `(X, W)`.
    Forward,
    /// `GX[b, i, k] = Σ_o G[b, o, k]·conj(W[i, o, k])` of `(G, W)`.
    GradInput,
    /// `GW[i, o, k] = Σ_b conj(X[b, i, k])·G[b, o, k]` of `(X, G)`.
    GradWeight,
}

impl ModeMix {
    /// `[batch, Cin, Cout, modes]` of the operands' shapes.
    ///
    /// Panics when the shapes do not fit together (the callers build them).
    pub fn extents(self, a: &[usize], b: &[usize]) -> [usize; 4] {
        let fits = a.len() == 4 && b.len() == 4 && a[3] == 2 && b[3] == 2;
        // The weight (`b` of the first two) may be one shared by every mode.
        let modes_fit = a[2] == b[2] || (self != ModeMix::GradWeight && b[2] == 1);
        let fits = fits && modes_fit;
        let extents = match self {
            ModeMix::Forward if fits && a[1] == b[0] => Some([a[0], b[0], b[1], a[2]]),
            ModeMix::GradInput if fits && a[1] == b[1] => Some([a[0], b[0], b[1], a[2]]),
            ModeMix::GradWeight if fits && a[0] == b[0] => Some([a[0], a[1], b[1], a[2]]),
            _ => None,
        };
        extents.unwrap_or_else(|| panic!("{self:?} mode mix of {a:?} and {b:?}: shapes do not fit"))
    }

    /// The result's shape.
    pub fn output_shape(self, a: &[usize], b: &[usize]) -> Vec<usize> {
        let [batch, cin, cout, modes] = self.extents(a, b);
        match self {
            ModeMix::Forward => vec![batch, cout, modes, 2],
            ModeMix::GradInput => vec![batch, cin, modes, 2],
            ModeMix::GradWeight => vec![cin, cout, modes, 2],
        }
    }

    /// The contractions giving the gradients of `a` and of `b` from the
    /// output's gradient `u`, as `(mix, first operand, second operand)` with
    /// the operands named `A`, `B`, `U`.
    pub(crate) fn gradients(self) -> [(ModeMix, Operand, Operand); 2] {
        use Operand::{A, B, U};
        match self {
            // Y = X·W: GX = U·Wᴴ, GW = Xᴴ·U.
            ModeMix::Forward => [(ModeMix::GradInput, U, B), (ModeMix::GradWeight, A, U)],
            // GX = G·Wᴴ: dG = U·W, dW = Uᴴ·G.
            ModeMix::GradInput => [(ModeMix::Forward, U, B), (ModeMix::GradWeight, U, A)],
            // GW = Xᴴ·G: dX = G·Uᴴ, dG = X·U.
            ModeMix::GradWeight => [(ModeMix::GradInput, B, U), (ModeMix::Forward, A, U)],
        }
    }
}

/// Backends that run [`mode_mix`]: Burn's matmuls by default, one CGEMM on `CubeBackend`.
pub trait ModeMixBackend: Backend {
    /// The contraction `mix` of `a` and `b` (see [`ModeMix`] for the shapes).
    fn mode_mix(a: FloatTensor<Self>, b: FloatTensor<Self>, mix: ModeMix) -> FloatTensor<Self> {
        mode_mix_by_matmuls::<Self>(a, b, mix)
    }

    /// Three contractions in a row, with a bias at one mode of the result
    /// and what `extras` asks for ([`crate::mode_chain`]).
    fn mode_mix_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<FloatTensor<Self>>,
        extras: ChainExtras,
    ) -> ChainOutput<Self> {
        chain_by_steps::<Self>(x, weights, mixes, bias, extras)
    }

    /// The gradient of the weight `w` of a `Forward` or `GradInput`
    /// contraction, `GradWeight` of `(a, u)` with mode `k`'s product times
    /// `scale[k % scale.len()]` (empty: none; else its length divides the
    /// modes, as a last axis's bins do): summed over the modes where `w`
    /// is shared by every mode, and laid out as `w` where the backend can (so
    /// the gradient of a factor's transposed view needs no copy).
    fn weight_gradient(
        a: FloatTensor<Self>,
        u: FloatTensor<Self>,
        w: FloatTensor<Self>,
        scale: &[f32],
    ) -> FloatTensor<Self> {
        let shared = is_shared(ModeMix::Forward, &a.shape(), &w.shape());
        let mut grad = Self::mode_mix(a, u, ModeMix::GradWeight);
        if !scale.is_empty() {
            grad = scale_bins::<Self>(grad, scale.to_vec(), false);
        }
        if shared {
            sum_modes::<Self>(grad)
        } else {
            grad
        }
    }
}

#[cfg(feature = "ndarray")]
impl ModeMixBackend for burn::backend::NdArray<f32> {}
#[cfg(feature = "ndarray")]
impl ModeMixBackend for burn::backend::NdArray<f64> {}
#[cfg(feature = "candle")]
#[allow(deprecated)]
impl ModeMixBackend for burn::backend::Candle<f32, i64> {}
#[cfg(feature = "candle")]
#[allow(deprecated)]
impl ModeMixBackend for burn::backend::Candle<f64, i64> {}

impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> ModeMixBackend for CubeBackend<R, F, I, BT> {
    fn mode_mix(a: FloatTensor<Self>, b: FloatTensor<Self>, mix: ModeMix) -> FloatTensor<Self> {
        mode_mix_by_cgemm(a, b, mix)
    }

    fn mode_mix_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<FloatTensor<Self>>,
        extras: ChainExtras,
    ) -> ChainOutput<Self> {
        chain_by_kernel::<R, Self>(x, weights, mixes, bias, extras)
    }

    fn weight_gradient(
        a: FloatTensor<Self>,
        u: FloatTensor<Self>,
        w: FloatTensor<Self>,
        scale: &[f32],
    ) -> FloatTensor<Self> {
        weight_gradient_by_cgemm::<R, Self>(a, u, w, scale)
    }
}

/// The contraction's backward: the weight's gradient (of `Forward` and
/// `GradInput`) by [`ModeMixBackend::weight_gradient`].
#[derive(Debug)]
struct ModeMixBackward(ModeMix);

impl<B: ModeMixBackend> Backward<B, 2> for ModeMixBackward {
    /// The operands, each kept where the other's gradient is wanted (`b`
    /// also where it is a weight and its gradient is: its layout).
    type State = (Option<NodeId>, Option<NodeId>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let u = grads.consume::<B>(&ops.node);
        let (a, b) = ops.state;
        let mut operand = |id: NodeId| -> FloatTensor<B> { checkpointer.retrieve_node_output(id) };
        let (a, b) = (a.map(&mut operand), b.map(&mut operand));
        for (parent, (mix, first, second)) in ops.parents.iter().zip(self.0.gradients()) {
            if let Some(node) = parent {
                // Each operand is kept where the other's gradient is wanted.
                let pick = |o: Operand| match o {
                    Operand::A => a.clone().expect("a kept for b's gradient"),
                    Operand::B => b.clone().expect("b kept for a's gradient"),
                    Operand::U => u.clone(),
                };
                let grad = match mix {
                    ModeMix::GradWeight => {
                        let w = b.clone().expect("a weight kept for its gradient's layout");
                        B::weight_gradient(pick(first), pick(second), w, &[])
                    }
                    _ => B::mode_mix(pick(first), pick(second), mix),
                };
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: ModeMixBackend, C: CheckpointStrategy> ModeMixBackend for Autodiff<B, C> {
    fn mode_mix(a: FloatTensor<Self>, b: FloatTensor<Self>, mix: ModeMix) -> FloatTensor<Self> {
        let (a_tracked, b_tracked) = (a.is_tracked(), b.is_tracked());
        let weight_tracked = b_tracked && mix != ModeMix::GradWeight;
        let out = B::mode_mix(a.primitive.clone(), b.primitive.clone(), mix);
        record::<B, C, _, 2>(ModeMixBackward(mix), [&a, &b], out, |checkpoint| {
            (
                b_tracked.then(|| checkpoint(&a)),
                (a_tracked || weight_tracked).then(|| checkpoint(&b)),
            )
        })
    }

    fn mode_mix_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<FloatTensor<Self>>,
        extras: ChainExtras,
    ) -> ChainOutput<Self> {
        autodiff_chain::<B, C>(x, weights, mixes, bias, extras)
    }
}

/// Whether `b` is a weight shared by the modes of `a`.
pub(crate) fn is_shared(mix: ModeMix, a: &[usize], b: &[usize]) -> bool {
    mix != ModeMix::GradWeight && b[2] == 1 && a[2] != 1
}

/// `[Cin, Cout, K, 2]` summed over the modes to `[Cin, Cout, 1, 2]`.
pub(crate) fn sum_modes<B: Backend>(t: FloatTensor<B>) -> FloatTensor<B> {
    Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(t))
        .sum_dim(2)
        .into_primitive()
        .tensor()
}

/// The contraction `mix` of `a` and `b`, with autodiff where `B` has it.
pub fn mode_mix<B: ModeMixBackend>(a: Tensor<B, 4>, b: Tensor<B, 4>, mix: ModeMix) -> Tensor<B, 4> {
    let (a, b) = (a.into_primitive().tensor(), b.into_primitive().tensor());
    Tensor::from_primitive(TensorPrimitive::Float(B::mode_mix(a, b, mix)))
}

type Parts<B> = (Tensor<B, 3>, Tensor<B, 3>);

/// `[R, C, K, 2]` → real and imaginary parts `[K, R, C]`: modes lead as the batch of products.
fn modes_leading<B: Backend>(t: FloatTensor<B>) -> Parts<B> {
    let t = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(t));
    let part = |i: usize| t.clone().narrow(3, i, 1).squeeze_dim::<3>(3).permute([2, 0, 1]);
    (part(0), part(1))
}

/// The conjugate transpose of each mode's matrix.
fn adjoint<B: Backend>((re, im): Parts<B>) -> Parts<B> {
    (re.swap_dims(1, 2), -im.swap_dims(1, 2))
}

fn product<B: Backend>((a, b): Parts<B>, (c, d): Parts<B>) -> FloatTensor<B> {
    let re = a.clone().matmul(c.clone()) - b.clone().matmul(d.clone());
    let im = a.matmul(d) + b.matmul(c);
    Tensor::stack::<4>(vec![re.permute([1, 2, 0]), im.permute([1, 2, 0])], 3)
        .into_primitive()
        .tensor()
}

/// The contraction by Burn's batched matmuls on any backend.
fn mode_mix_by_matmuls<B: Backend>(a: FloatTensor<B>, b: FloatTensor<B>, mix: ModeMix) -> FloatTensor<B> {
    let [_, _, _, modes] = mix.extents(&a.shape(), &b.shape());
    let (a, (b_re, b_im)) = (modes_leading::<B>(a), modes_leading::<B>(b));
    let every_mode = |t: Tensor<B, 3>| {
        let [_, rows, cols] = t.dims();
        t.expand([modes, rows, cols])
    };
    let b = (every_mode(b_re), every_mode(b_im));
    match mix {
        ModeMix::Forward => product(a, b),
        ModeMix::GradInput => product(a, adjoint(b)),
        ModeMix::GradWeight => product(adjoint(a), b),
    }
}

/// [`ModeMixBackend::weight_gradient`] as one CGEMM written at `w`'s strides
/// (its mode sum by [`CgemmProblem::launch_mode_sum`]); the gradient is
/// a tensor of `w`'s shape and strides. Layouts the CGEMM cannot describe,
/// and broadcast ones (a zero stride would write one value from many), take
/// the default's dense result.
fn weight_gradient_by_cgemm<R: CubeRuntime, B: Backend<FloatTensorPrimitive = CubeTensor<R>>>(
    a: CubeTensor<R>,
    u: CubeTensor<R>,
    w: CubeTensor<R>,
    scale: &[f32],
) -> CubeTensor<R> {
    let a = into_contiguous(cast_to(a, DType::F32));
    let u = into_contiguous(cast_to(u, DType::F32));
    let [batch, cin, cout, modes] = ModeMix::GradWeight.extents(&a.meta.shape().to_vec(), &u.meta.shape().to_vec());
    let w_shape = w.meta.shape().to_vec();
    assert_eq!(
        w_shape[..2],
        [cin, cout],
        "a weight gradient of {cin}×{cout} for a weight of {w_shape:?}"
    );
    let shared = w_shape[2] == 1 && modes != 1;
    let distinct = |s: &Strides| s.row > 0 && s.col > 0 && (shared || s.mode > 0);
    let per_mode = spectral::grad_weight(batch, cin, cout, modes);
    let layout = weight_strides(&w, shared).filter(distinct);
    let problem = CgemmProblem {
        c: layout.unwrap_or(per_mode.c),
        mode_scale: scale.to_vec(),
        ..per_mode
    };
    let Some(strides) = layout else {
        // A layout one stride per dim cannot describe: dense, summed by Burn where shared.
        let out = empty(&a, vec![cin, cout, modes, 2]);
        problem.launch(&a.client, &a.handle, &u.handle, &out.handle);
        return if shared { sum_modes::<B>(out) } else { out };
    };
    let extent = span(strides, cin, cout, if shared { 1 } else { modes });
    let handle = a.client.empty(2 * extent * DType::F32.size());
    if shared {
        problem.launch_mode_sum(&a.client, &a.handle, &u.handle, &handle);
    } else {
        problem.launch(&a.client, &a.handle, &u.handle, &handle);
    }
    CubeTensor::new(
        a.client.clone(),
        handle,
        (*w.meta).clone(),
        a.device.clone(),
        DType::F32,
    )
}

/// The contraction as one CGEMM launch, f32 throughout. A weight is read
/// at its strides (Burn's CUDA allocator pads its (re, im) pairs), spectra
/// densely.
fn mode_mix_by_cgemm<R: CubeRuntime>(a: CubeTensor<R>, b: CubeTensor<R>, mix: ModeMix) -> CubeTensor<R> {
    let a = into_contiguous(cast_to(a, DType::F32));
    let b = cast_to(b, DType::F32);
    let (a_shape, b_shape) = (a.meta.shape().to_vec(), b.meta.shape().to_vec());
    let [batch, cin, cout, modes] = mix.extents(&a_shape, &b_shape);
    let shared = is_shared(mix, &a_shape, &b_shape);
    let (b, problem) = match mix {
        ModeMix::Forward | ModeMix::GradInput => {
            let (weight, strides) = weight_operand(b, cout, modes, shared);
            let problem = match mix {
                ModeMix::Forward => spectral::forward(batch, cin, cout, modes, strides),
                _ => spectral::grad_input(batch, cin, cout, modes, strides),
            };
            (weight, problem)
        }
        ModeMix::GradWeight => (into_contiguous(b), spectral::grad_weight(batch, cin, cout, modes)),
    };
    let out = empty(&a, mix.output_shape(&a_shape, &b_shape));
    problem.launch(&a.client, &a.handle, &b.handle, &out.handle);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_follow_each_contraction() {
        let (x, w, g) = ([4, 3, 10, 2], [3, 5, 10, 2], [4, 5, 10, 2]);
        assert_eq!(ModeMix::Forward.extents(&x, &w), [4, 3, 5, 10]);
        assert_eq!(ModeMix::Forward.output_shape(&x, &w), g.to_vec());
        assert_eq!(ModeMix::GradInput.output_shape(&g, &w), x.to_vec());
        assert_eq!(ModeMix::GradWeight.output_shape(&x, &g), w.to_vec());
        let shared = [3, 5, 1, 2];
        assert_eq!(ModeMix::Forward.output_shape(&x, &shared), g.to_vec());
        assert_eq!(ModeMix::GradInput.output_shape(&g, &shared), x.to_vec());
        assert!(is_shared(ModeMix::Forward, &x, &shared) && !is_shared(ModeMix::Forward, &x, &w));
    }

    #[test]
    #[should_panic(expected = "shapes do not fit")]
    fn mismatched_channels_are_refused() {
        ModeMix::Forward.extents(&[4, 3, 10, 2], &[4, 5, 10, 2]);
    }
}
