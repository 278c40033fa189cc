//! [`PreciseMatmulBackend`] on `Autodiff`: the backward is two more precise products.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::TensorMetadata;

use super::record;
use crate::matmul::PreciseMatmulBackend;

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
