//! [`PreciseMatmulBackend`] on `CubeBackend`: our real GEMM kernel
//! ([`fno_kernels::cgemm::real`]) for f32, Burn's matmul for half types.

use burn::tensor::ops::{FloatTensor, FloatTensorOps};
use burn::tensor::DType;
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::cgemm::real::{self, MatrixStrides};

use super::tensor::empty;
use crate::matmul::{product_shape, PreciseMatmulBackend};

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
