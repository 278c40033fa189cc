//! [`NufftBackend`] on `Fusion`: each transform one custom op (f32 output,
//! as the inner kernels give).

use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_fusion::{Fusion, FusionBackend};

use super::register_one;
use crate::nonuniform::{NufftBackend, NufftOp};

impl<B: FusionBackend + NufftBackend> NufftBackend for Fusion<B> {
    fn nufft(x: FloatTensor<Self>, op: &NufftOp) -> FloatTensor<Self> {
        let lead = &x.shape[..x.shape.len() - op.input_rank()];
        let shape = op.output_shape(lead);
        let op = op.clone();
        register_one::<B>("fno_nufft", vec![x], (shape, DType::F32), move |t| {
            let [x] = <[_; 1]>::try_from(t).expect("one operand");
            B::nufft(x, &op)
        })
    }
}
