//! [`PointwiseBackend`] on `Autodiff`: the 1×1 convolution's (plain and
//! finished by a residual and GELU), the channel scale's and GELU's nodes,
//! each backward built of the same backend's ops.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, TensorMetadata};

use super::record;
use crate::pointwise::{MatmulPrecision, PointwiseBackend, Residual};
use crate::reference::pointwise::{unwrap, wrap};

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
            let x = checkpointer.retrieve_node_output(x);
            grads.register::<B>(node.id, B::channel_scale_grad(unwrap(grad), x, scale_dtype));
        }
    }
}

/// Which optional parents a finished convolution's node has, after (x, weight):
/// the bias, the residual, its gate, in that order.
#[derive(Clone, Copy, Debug)]
struct FinishedSlots {
    bias: bool,
    residual: bool,
    gate: bool,
}

/// A finished convolution's node ([`PointwiseBackend::pointwise_conv_finished`]).
#[derive(Debug)]
struct ConvFinishedBackward(MatmulPrecision, FinishedSlots);

/// What its backward keeps: x (when a parameter needs its gradient), the
/// weight (when x does), the sums before GELU (when there is one), the
/// residual (when the gate needs its gradient), the gate (when the residual
/// does) and the gate's dtype.
#[derive(Clone, Debug)]
struct FinishedState<B: PointwiseBackend> {
    x: Option<NodeId>,
    weight: Option<NodeId>,
    pre: Option<FloatTensor<B>>,
    residual: Option<NodeId>,
    gate: Option<(NodeId, DType)>,
}

impl<B: PointwiseBackend, const N: usize> Backward<B, N> for ConvFinishedBackward {
    type State = FinishedState<B>;

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let (precision, slots) = (self.0, self.1);
        let grad = grads.consume::<B>(&ops.node);
        let state = ops.state;
        let grad = match state.pre {
            Some(pre) => B::exact_gelu_grad(pre, grad),
            None => grad,
        };
        let parents: Vec<_> = ops.parents.into_iter().map(|p| p.map(|p| p.id)).collect();
        let mut slot = 2;
        let mut next = |present: bool| {
            let id = present.then(|| parents[slot]).flatten();
            slot += present as usize;
            id
        };
        let (bias, residual, gate) = (next(slots.bias), next(slots.residual), next(slots.gate));
        if let Some(node) = residual {
            let g = match state.gate {
                Some((g, _)) => B::channel_scale(grad.clone(), checkpointer.retrieve_node_output(g)),
                None => grad.clone(),
            };
            grads.register::<B>(node, g);
        }
        if let (Some(node), Some(r), Some((_, dtype))) = (gate, state.residual, state.gate) {
            let r = checkpointer.retrieve_node_output(r);
            grads.register::<B>(node, B::channel_scale_grad(grad.clone(), r, dtype));
        }
        if let (Some(node), Some(w)) = (parents[0], state.weight) {
            let w: FloatTensor<B> = checkpointer.retrieve_node_output(w);
            grads.register::<B>(
                node,
                B::pointwise_conv(grad.clone(), B::float_transpose(w), None, precision),
            );
        }
        if let Some(x) = state.x {
            let x: FloatTensor<B> = checkpointer.retrieve_node_output(x);
            let (gw, gb) = B::pointwise_param_grads(grad, x, bias.is_some());
            if let Some(node) = parents[1] {
                grads.register::<B>(node, gw);
            }
            if let (Some(node), Some(gb)) = (bias, gb) {
                grads.register::<B>(node, gb);
            }
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

    fn pointwise_conv_finished(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: Option<Residual<FloatTensor<Self>>>,
        gelu: bool,
        keep_pre: bool,
        precision: MatmulPrecision,
    ) -> (FloatTensor<Self>, Option<FloatTensor<Self>>) {
        let (values, gate) = residual.map_or((None, None), |r| (Some(r.values), r.gate));
        let slots = FinishedSlots {
            bias: bias.is_some(),
            residual: values.is_some(),
            gate: gate.is_some(),
        };
        let parents: Vec<&FloatTensor<Self>> = [Some(&x), Some(&weight), bias.as_ref(), values.as_ref(), gate.as_ref()]
            .into_iter()
            .flatten()
            .collect();
        let tracked = |t: &FloatTensor<Self>| t.is_tracked();
        let params_tracked = weight.is_tracked() || bias.as_ref().is_some_and(tracked);
        let any_tracked = parents.iter().any(|t| t.is_tracked());
        let inner = |t: &FloatTensor<Self>| t.primitive.clone();
        let (out, pre) = B::pointwise_conv_finished(
            inner(&x),
            inner(&weight),
            bias.as_ref().map(inner),
            values.as_ref().map(|v| Residual {
                values: inner(v),
                gate: gate.as_ref().map(inner),
            }),
            gelu,
            gelu && (keep_pre || any_tracked),
            precision,
        );
        assert!(
            pre.is_some() || !(gelu && any_tracked),
            "the inner backend kept no sums for GELU's derivative"
        );
        let keep = |checkpoint: &mut dyn FnMut(&FloatTensor<Self>) -> NodeId| FinishedState {
            x: params_tracked.then(|| checkpoint(&x)),
            weight: x.is_tracked().then(|| checkpoint(&weight)),
            pre: pre.clone(),
            residual: gate
                .as_ref()
                .filter(|g| g.is_tracked())
                .and(values.as_ref())
                .map(&mut *checkpoint),
            gate: gate
                .as_ref()
                .filter(|_| values.as_ref().is_some_and(tracked))
                .map(|g| (checkpoint(g), g.primitive.dtype())),
        };
        let op = ConvFinishedBackward(precision, slots);
        let out = match parents.len() {
            2 => record::<B, C, _, 2>(op, parents.try_into().expect("2"), out, keep),
            3 => record::<B, C, _, 3>(op, parents.try_into().expect("3"), out, keep),
            4 => record::<B, C, _, 4>(op, parents.try_into().expect("4"), out, keep),
            _ => record::<B, C, _, 5>(op, parents.try_into().expect("5"), out, keep),
        };
        (out, pre.filter(|_| keep_pre).map(Self::from_inner))
    }

    fn tf32_available(device: &Self::Device) -> bool {
        B::tf32_available(device)
    }

    fn exact_gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let out = B::exact_gelu(x.primitive.clone());
        record::<B, C, _, 1>(GeluBackward, [&x], out, |checkpoint| checkpoint(&x))
    }

    fn loss_norms(x: FloatTensor<Self>, y: FloatTensor<Self>, derivatives: bool) -> FloatTensor<Self> {
        super::loss::loss_norms::<B, C>(x, y, derivatives)
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
