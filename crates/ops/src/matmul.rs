//! Matrix products with f32 multiplies and sums on every backend.
//!
//! Burn's CUDA matmul rounds f32 operands to TF32 on tensor cores (10-bit
//! mantissas), which costs an FNO's 1×1 convolutions and the reference path's
//! DFT matrices three to four digits. [`precise_matmul`] runs our real GEMM
//! kernel on `CubeBackend` instead, and Burn's matmul on the CPU backends, whose
//! f32 products are already exact; under `Autodiff` its backward is built of the
//! same products.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, FloatTensorOps};
use burn::tensor::{DType, Tensor, TensorMetadata, TensorPrimitive};
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::cgemm::real::{self, MatrixStrides};

use crate::cube_tensor::empty;
use crate::graph::record;

/// A backend with matrix products whose f32 multiplies and sums are not rounded
/// to a narrower type.
pub trait PreciseMatmulBackend: Backend {
    /// `[.., m, k]·[.., k, n]` where the leading dims are equal or one side's are
    /// all 1 (repeated over the other's). The default is Burn's matmul, for
    /// backends whose f32 matmul is already f32 throughout.
    fn precise_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_matmul(lhs, rhs)
    }
}

/// [`PreciseMatmulBackend::precise_matmul`] on tensors: `[.., m, k]·[.., k, n]`.
///
/// # Panics
/// If the inner dims differ, or the leading dims are neither equal nor all 1 on
/// one side (as Burn's matmul panics on shapes it cannot multiply).
pub fn precise_matmul<B: PreciseMatmulBackend, const D: usize>(lhs: Tensor<B, D>, rhs: Tensor<B, D>) -> Tensor<B, D> {
    let (l, r) = (lhs.dims(), rhs.dims());
    assert!(D >= 2, "matrix products need two dims");
    assert_eq!(l[D - 1], r[D - 2], "matmul of {l:?} by {r:?}: inner dims differ");
    output_batch(&l[..D - 2], &r[..D - 2]);
    Tensor::from_primitive(TensorPrimitive::Float(B::precise_matmul(
        lhs.into_primitive().tensor(),
        rhs.into_primitive().tensor(),
    )))
}

/// The shape of `[.., m, k]·[.., k, n]` (shapes checked by [`precise_matmul`]).
pub(crate) fn product_shape(lhs: &[usize], rhs: &[usize]) -> Vec<usize> {
    let rank = lhs.len();
    let mut shape = output_batch(&lhs[..rank - 2], &rhs[..rank - 2]).to_vec();
    shape.extend([lhs[rank - 2], rhs[rank - 1]]);
    shape
}

/// The leading dims of the product.
fn output_batch<'a>(lhs: &'a [usize], rhs: &'a [usize]) -> &'a [usize] {
    let ones = |s: &[usize]| s.iter().all(|&d| d == 1);
    if lhs == rhs || ones(rhs) {
        lhs
    } else if ones(lhs) {
        rhs
    } else {
        panic!("matmul leading dims {lhs:?} and {rhs:?}: neither equal nor repeated")
    }
}

#[cfg(feature = "ndarray")]
impl PreciseMatmulBackend for burn::backend::NdArray<f32> {}
#[cfg(feature = "ndarray")]
impl PreciseMatmulBackend for burn::backend::NdArray<f64> {}
// Burn 0.21 deprecates its Candle backend but still ships it; we test on it.
#[cfg(feature = "candle")]
#[allow(deprecated)]
mod candle_impls {
    use super::PreciseMatmulBackend;
    impl PreciseMatmulBackend for burn::backend::Candle<f32, i64> {}
    impl PreciseMatmulBackend for burn::backend::Candle<f64, i64> {}
}

/// The stride walking a tensor's leading dims as one batch index (0 when they
/// hold one matrix), or `None` when they do not collapse to one stride.
fn batch_stride(shape: &[usize], strides: &[usize]) -> Option<usize> {
    let lead: Vec<(usize, usize)> = shape[..shape.len() - 2]
        .iter()
        .zip(strides)
        .filter(|(&d, _)| d > 1)
        .map(|(&d, &s)| (d, s))
        .collect();
    let Some(&(_, innermost)) = lead.last() else {
        return Some(0);
    };
    lead.windows(2).all(|w| w[0].1 == w[1].1 * w[1].0).then_some(innermost)
}

impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> PreciseMatmulBackend
    for CubeBackend<R, F, I, BT>
{
    fn precise_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        // Half-precision types have no narrower rounding to avoid.
        if lhs.dtype != DType::F32 || rhs.dtype != DType::F32 {
            return Self::float_matmul(lhs, rhs);
        }
        let stacked = |t: CubeTensor<R>| -> (CubeTensor<R>, MatrixStrides) {
            let t = match batch_stride(t.meta.shape(), t.meta.strides()) {
                Some(_) => t,
                None => into_contiguous(t),
            };
            let (shape, strides) = (t.meta.shape().to_vec(), t.meta.strides().to_vec());
            let rank = shape.len();
            let batch = batch_stride(&shape, &strides).expect("a contiguous tensor's batch collapses");
            let s = MatrixStrides {
                batch,
                row: strides[rank - 2],
                col: strides[rank - 1],
            };
            (t, s)
        };
        let (lhs, ls) = stacked(lhs);
        let (rhs, rs) = stacked(rhs);
        let (l, r) = (lhs.meta.shape().to_vec(), rhs.meta.shape().to_vec());
        let rank = l.len();
        let (m, k, n) = (l[rank - 2], l[rank - 1], r[rank - 1]);
        let out_shape = product_shape(&l, &r);
        let batch: usize = out_shape[..rank - 2].iter().product();
        let out = empty(&lhs, out_shape);
        if batch * m * n > 0 {
            real::matmul(batch, m, k, n, ls, rs).launch(&out.client, &lhs.handle, &rhs.handle, &out.handle);
        }
        out
    }
}

/// Sums `grad` over the dims where `shape` (its operand's) is 1 and `grad` is not.
fn sum_repeated<B: Backend>(mut grad: FloatTensor<B>, shape: &[usize]) -> FloatTensor<B> {
    let grad_shape = grad.shape().to_vec();
    for (d, (&have, &want)) in grad_shape.iter().zip(shape).enumerate() {
        if want == 1 && have != 1 {
            grad = B::float_sum_dim(grad, d);
        }
    }
    grad
}

#[derive(Debug)]
struct PreciseMatmulBackward;

impl<B: PreciseMatmulBackend> Backward<B, 2> for PreciseMatmulBackward {
    /// The operands (each kept only when the other needs a gradient) and their shapes.
    type State = (Option<NodeId>, Option<NodeId>, Vec<usize>, Vec<usize>);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_lhs, node_rhs] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        let (lhs, rhs, lhs_shape, rhs_shape) = ops.state;
        if let Some(node) = node_lhs {
            let rhs: FloatTensor<B> = checkpointer.retrieve_node_output(rhs.expect("kept for the lhs gradient"));
            let g = B::precise_matmul(grad.clone(), B::float_transpose(rhs));
            grads.register::<B>(node.id, sum_repeated::<B>(g, &lhs_shape));
        }
        if let Some(node) = node_rhs {
            let lhs: FloatTensor<B> = checkpointer.retrieve_node_output(lhs.expect("kept for the rhs gradient"));
            let g = B::precise_matmul(B::float_transpose(lhs), grad);
            grads.register::<B>(node.id, sum_repeated::<B>(g, &rhs_shape));
        }
    }
}

impl<B: PreciseMatmulBackend, C: CheckpointStrategy> PreciseMatmulBackend for Autodiff<B, C> {
    fn precise_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        let shapes = (lhs.primitive.shape().to_vec(), rhs.primitive.shape().to_vec());
        let (lhs_tracked, rhs_tracked) = (lhs.is_tracked(), rhs.is_tracked());
        let out = B::precise_matmul(lhs.primitive.clone(), rhs.primitive.clone());
        record::<B, C, _, 2>(PreciseMatmulBackward, [&lhs, &rhs], out, |checkpoint| {
            let lhs_state = rhs_tracked.then(|| checkpoint(&lhs));
            let rhs_state = lhs_tracked.then(|| checkpoint(&rhs));
            (lhs_state, rhs_state, shapes.0, shapes.1)
        })
    }
}
