//! [`PreciseMatmulBackend`] on `Fusion`: one custom op over f32 operands,
//! Burn's matmul for other dtypes (as the inner backend does).

use burn::tensor::ops::{FloatTensor, FloatTensorOps};
use burn::tensor::DType;
use burn_fusion::{Fusion, FusionBackend};

use super::register_one;
use crate::matmul::{product_shape, PreciseMatmulBackend};

impl<B: FusionBackend + PreciseMatmulBackend> PreciseMatmulBackend for Fusion<B> {
    fn precise_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        if lhs.dtype != DType::F32 || rhs.dtype != DType::F32 {
            return Self::float_matmul(lhs, rhs);
        }
        let shape = product_shape(&lhs.shape, &rhs.shape);
        register_one::<B>("fno_precise_matmul", vec![lhs, rhs], (shape, DType::F32), |t| {
            let [lhs, rhs] = <[_; 2]>::try_from(t).expect("two operands");
            B::precise_matmul(lhs, rhs)
        })
    }
}
