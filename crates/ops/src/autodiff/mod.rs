//! Our ops on Burn's `Autodiff<B>` of any backend `B` that has them: each op
//! one node of the graph, whose backward runs `B`'s ops (the adjoints of the
//! kernel paths where `B` has kernels).

mod loss;
mod matmul;
mod mode_mix;
mod nonuniform;
mod pointwise;
mod spectral;

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::ops::{Backward, OpsKind};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

/// Records `op` on the graph, whose inner result is `out`, with the tensors its gradients
/// flow to; `keep` builds the backward's state from a function that
/// checkpoints a tensor, and runs only when some parent is tracked.
pub(crate) fn record<B, C, T, const N: usize>(
    op: T,
    parents: [&FloatTensor<Autodiff<B, C>>; N],
    out: FloatTensor<B>,
    keep: impl FnOnce(&mut dyn FnMut(&FloatTensor<Autodiff<B, C>>) -> NodeId) -> T::State,
) -> FloatTensor<Autodiff<B, C>>
where
    B: Backend,
    C: CheckpointStrategy,
    T: Backward<B, N>,
{
    match op
        .prepare::<C>(parents.map(|t| t.node.clone()))
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let state = keep(&mut |t| prep.checkpoint(t));
            prep.finish(state, out)
        }
        OpsKind::UnTracked(prep) => prep.finish(out),
    }
}
