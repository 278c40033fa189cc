//! Matrix products with f32 multiplies and sums on every backend.
//!
//! Burn's CUDA matmul rounds f32 operands to TF32 on tensor cores (10-bit
//! mantissas), which costs an FNO's 1×1 convolutions and the reference path's
//! DFT matrices three to four digits. [`precise_matmul`] runs our real GEMM
//! kernel on `CubeBackend` instead, and Burn's matmul on the CPU backends, whose
//! f32 products are already exact; under `Autodiff` its backward is built of the
//! same products.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorPrimitive};

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
