//! [`NufftBackend`] on `Autodiff`: a transform's gradient is its adjoint's
//! transform of the output gradient.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::Autodiff;
use burn::tensor::ops::FloatTensor;

use super::record;
use crate::nonuniform::{NufftBackend, NufftOp};

/// The node of [`nufft`]: its gradient is its adjoint's transform of the
/// output gradient.
#[derive(Debug)]
struct NufftBackward(NufftOp);

impl<B: NufftBackend> Backward<B, 1> for NufftBackward {
    type State = ();

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        if let [Some(node)] = ops.parents {
            grads.register::<B>(node.id, B::nufft(grad, &self.0.adjoint()));
        }
    }
}

impl<B: NufftBackend, C: CheckpointStrategy> NufftBackend for Autodiff<B, C> {
    fn nufft(x: FloatTensor<Self>, op: &NufftOp) -> FloatTensor<Self> {
        let out = B::nufft(x.primitive.clone(), op);
        record::<B, C, _, 1>(NufftBackward(op.clone()), [&x], out, |_| ())
    }
}
