//! The loss norms' node on `Autodiff`: parents `(x, y)`, the backward one
//! [`PointwiseBackend::loss_norms_grad`] per tracked parent (two for `y`,
//! which both norms read). The gradient op itself keeps its default, Burn's
//! ops, where a second derivative is asked for.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::ops::FloatTensor;

use super::record;
use crate::pointwise::PointwiseBackend;
use crate::reference::pointwise::{unwrap, wrap};

#[derive(Debug)]
struct LossNormsBackward(bool);

impl<B: PointwiseBackend> Backward<B, 2> for LossNormsBackward {
    /// `x` and `y`, kept when any parent is tracked.
    type State = (NodeId, NodeId);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_y] = ops.parents;
        let grad = wrap::<B, 2>(grads.consume::<B>(&ops.node));
        let rows = grad.dims()[1];
        let row = |i: usize| unwrap(grad.clone().slice([i..i + 1, 0..rows]).reshape([rows]));
        let x: FloatTensor<B> = checkpointer.retrieve_node_output(ops.state.0);
        let y: FloatTensor<B> = checkpointer.retrieve_node_output(ops.state.1);
        let of_difference = B::loss_norms_grad(x, Some(y.clone()), row(0), self.0);
        if let Some(node) = node_y {
            // y's own norms, less what it takes from the difference's.
            let of_y = B::loss_norms_grad(y, None, row(1), self.0);
            grads.register::<B>(node.id, B::float_sub(of_y, of_difference.clone()));
        }
        if let Some(node) = node_x {
            grads.register::<B>(node.id, of_difference);
        }
    }
}

pub(super) fn loss_norms<B: PointwiseBackend, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    y: FloatTensor<Autodiff<B, C>>,
    derivatives: bool,
) -> FloatTensor<Autodiff<B, C>> {
    let out = B::loss_norms(x.primitive.clone(), y.primitive.clone(), derivatives);
    record::<B, C, _, 2>(LossNormsBackward(derivatives), [&x, &y], out, |checkpoint| {
        (checkpoint(&x), checkpoint(&y))
    })
}
