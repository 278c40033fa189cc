//! [`PointwiseBackend`] on `Autodiff`: the 1×1 convolution's, the channel
//! scale's and GELU's nodes, each backward built of the same backend's ops.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor, TensorMetadata};

use super::record;
use crate::pointwise::{MatmulPrecision, PointwiseBackend};
use crate::reference::pointwise::{channel_sums, unwrap, wrap};

/// GELU's node: its input, kept for the derivative.
#[derive(Debug)]
struct GeluBackward;

impl<B: PointwiseBackend> Backward<B, 1> for GeluBackward {
    type State = NodeId;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node] = ops.parents;
        let grad = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let x: FloatTensor<B> = checkpointer.retrieve_node_output(ops.state);
            grads.register::<B>(node.id, B::exact_gelu_grad(x, grad));
        }
    }
}

/// The 1×1 convolution's node: parents (x, weight) or (x, weight, bias); the
/// input gradient multiplies at the forward's precision.
#[derive(Debug)]
struct PointwiseConvBackward<const N: usize>(MatmulPrecision);

impl<B: PointwiseBackend, const N: usize> Backward<B, N> for PointwiseConvBackward<N> {
    /// x (kept when a parameter needs its gradient) and the weight (kept when x does).
    type State = (Option<NodeId>, Option<NodeId>);

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let (x_state, w_state) = ops.state;
        let parents: Vec<_> = ops.parents.into_iter().collect();
        let tracked = |i: usize| parents.get(i).and_then(|p| p.as_ref()).map(|p| p.id);
        if let (Some(node), Some(w)) = (tracked(0), w_state) {
            let w: FloatTensor<B> = checkpointer.retrieve_node_output(w);
            let gx = B::pointwise_conv(grad.clone(), B::float_transpose(w), None, self.0);
            grads.register::<B>(node, gx);
        }
        if let Some(x) = x_state {
            let x: FloatTensor<B> = checkpointer.retrieve_node_output(x);
            let (gw, gb) = B::pointwise_param_grads(grad, x, tracked(2).is_some());
            if let Some(node) = tracked(1) {
                grads.register::<B>(node, gw);
            }
            if let (Some(node), Some(gb)) = (tracked(2), gb) {
                grads.register::<B>(node, gb);
            }
        }
    }
}

/// The channel scale's node: parents (x, scale).
#[derive(Debug)]
struct ChannelScaleBackward;

impl<B: PointwiseBackend> Backward<B, 2> for ChannelScaleBackward {
    /// x (kept when the scale needs its gradient), the scale (kept when x
    /// does) and the scale's dtype.
    type State = (Option<NodeId>, Option<NodeId>, DType);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let [node_x, node_scale] = ops.parents;
        let grad = wrap::<B, 3>(grads.consume::<B>(&ops.node));
        let (x_state, scale_state, scale_dtype) = ops.state;
        if let (Some(node), Some(scale)) = (node_x, scale_state) {
            let scale: FloatTensor<B> = checkpointer.retrieve_node_output(scale);
            grads.register::<B>(node.id, B::channel_scale(unwrap(grad.clone()), scale));
        }
        if let (Some(node), Some(x)) = (node_scale, x_state) {
            let x = wrap::<B, 3>(checkpointer.retrieve_node_output(x));
            // Summed in f32 (half products over a batch's points overflow f16,
            // more so under a loss scale), returned in the scale's dtype.
            let f32_of = |t: Tensor<B, 3>| if t.dtype() == DType::F32 { t } else { t.cast(DType::F32) };
            let sums = channel_sums(f32_of(grad) * f32_of(x));
            let sums = if scale_dtype == DType::F32 {
                sums
            } else {
                sums.cast(scale_dtype)
            };
            grads.register::<B>(node.id, unwrap(sums));
        }
    }
}

impl<B: PointwiseBackend, C: CheckpointStrategy> PointwiseBackend for Autodiff<B, C> {
    fn pointwise_conv(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        precision: MatmulPrecision,
    ) -> FloatTensor<Self> {
        let out = B::pointwise_conv(
            x.primitive.clone(),
            weight.primitive.clone(),
            bias.as_ref().map(|b| b.primitive.clone()),
            precision,
        );
        let params_tracked = weight.is_tracked() || bias.as_ref().is_some_and(|b| b.is_tracked());
        let x_tracked = x.is_tracked();
        let keep = |checkpoint: &mut dyn FnMut(&FloatTensor<Self>) -> NodeId| {
            (
                params_tracked.then(|| checkpoint(&x)),
                x_tracked.then(|| checkpoint(&weight)),
            )
        };
        match &bias {
            None => record::<B, C, _, 2>(PointwiseConvBackward::<2>(precision), [&x, &weight], out, keep),
            Some(b) => record::<B, C, _, 3>(PointwiseConvBackward::<3>(precision), [&x, &weight, b], out, keep),
        }
    }

    fn tf32_available(device: &Self::Device) -> bool {
        B::tf32_available(device)
    }

    fn exact_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let out = B::exact_gelu(x.primitive.clone());
        record::<B, C, _, 1>(GeluBackward, [&x], out, |checkpoint| checkpoint(&x))
    }

    fn channel_scale(x: FloatTensor<Self>, scale: FloatTensor<Self>) -> FloatTensor<Self> {
        let out = B::channel_scale(x.primitive.clone(), scale.primitive.clone());
        let (x_tracked, scale_tracked) = (x.is_tracked(), scale.is_tracked());
        let scale_dtype = scale.primitive.dtype();
        record::<B, C, _, 2>(ChannelScaleBackward, [&x, &scale], out, |checkpoint| {
            (
                scale_tracked.then(|| checkpoint(&x)),
                x_tracked.then(|| checkpoint(&scale)),
                scale_dtype,
            )
        })
    }
}
