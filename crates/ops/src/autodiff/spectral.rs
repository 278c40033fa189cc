//! [`SpectralConvBackend`] on `Autodiff`: the convolution's node (its backward
//! the kernel path's adjoint chain, from the retained spectrum the forward
//! kept), the two transforms' nodes (each one's backward the other's
//! adjoint), and the chain between the transforms as one node.
//!
//! That node's backward runs both transforms without the last axis's bin
//! weights (a Mul and a Div, each with an upload, on the separate transform
//! ops). The weights cancel on the input's path, as the chain acts on each
//! mode alone, and they join the weight gradients as the CGEMM's mode scale.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::{Autodiff, NodeId};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, TensorMetadata};
use fno_kernels::cgemm::ModeBias;
use fno_kernels::fault::FaultCounts;
use fno_kernels::precision::Precision;

use super::mode_mix::{chain_gradients, record_chain, wanted, ChainBackward, ChainState};
use super::record;
use crate::mode_mix::{ChainExtras, ModeMix};
use crate::rounding::precision_of;
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes};
use crate::spectral::{
    spectral_chain_by_steps, ChainTransforms, DeviceMemory, Pass, SpectralConvBackend, SpectralGrads,
};

/// The op's node: `N` = 2 parents (x, weight) or 3 (x, weight, bias).
#[derive(Debug)]
struct SpectralConvBackward<const N: usize>;

impl<B: SpectralConvBackend, const N: usize> Backward<B, N> for SpectralConvBackward<N> {
    /// What the forward saved of `x`, the shape of `x`, the weight, the op.
    type State = (FloatTensor<B>, Vec<usize>, NodeId, SpectralConvSpec, SpectralImpl);

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let grad = grads.consume::<B>(&ops.node);
        let (saved_x, x_shape, w_state, spec, imp) = ops.state;
        let w: FloatTensor<B> = checkpointer.retrieve_node_output(w_state);
        // The forward ran the same shapes through the same path, so this cannot
        // fail for a reason the caller could still act on.
        let g = B::spectral_conv_backward(saved_x, &x_shape, w, grad, N == 3, &spec, imp)
            .unwrap_or_else(|e| panic!("spectral convolution backward: {e}"));
        for (node, grad) in ops.parents.into_iter().zip([Some(g.x), Some(g.weight), g.bias]) {
            if let (Some(node), Some(grad)) = (node, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: SpectralConvBackend, C: CheckpointStrategy> SpectralConvBackend for Autodiff<B, C> {
    fn device_memory(device: &Self::Device) -> Option<DeviceMemory> {
        B::device_memory(device)
    }

    fn fault_counts(device: &Self::Device) -> FaultCounts {
        B::fault_counts(device)
    }

    fn storage_dtype(device: &Self::Device, precision: Precision) -> DType {
        B::storage_dtype(device, precision)
    }

    fn spectral_conv_check(
        device: &Self::Device,
        x: (&[usize], DType),
        weight: (&[usize], DType),
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<SpectralShapes, SpectralError> {
        B::spectral_conv_check(device, x, weight, spec, imp)
    }

    fn spectral_conv_forward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
        keep_saved: bool,
    ) -> Result<(FloatTensor<Self>, Option<FloatTensor<Self>>), SpectralError> {
        let x_shape = x.primitive.shape().to_vec();
        let inner_bias = bias.as_ref().map(|b| b.primitive.clone());
        // The backward's operand is needed where the op joins the graph: some
        // parent is tracked.
        let tracked = [Some(&x), Some(&weight), bias.as_ref()]
            .into_iter()
            .flatten()
            .any(|t| !t.node.requirement.is_none());
        let (out, saved_x) = B::spectral_conv_forward(
            x.primitive.clone(),
            weight.primitive.clone(),
            inner_bias,
            spec,
            imp,
            keep_saved || tracked,
        )?;
        // Nothing differentiates through the saved spectrum: returned untracked.
        let saved = saved_x.clone().filter(|_| keep_saved).map(Self::from_inner);
        // Records the op with its parents (the weight the second, checkpointed).
        let keep = |checkpoint: &mut dyn FnMut(&FloatTensor<Self>) -> NodeId| {
            let saved_x = saved_x.expect("a tracked forward keeps the backward's operand");
            (saved_x, x_shape, checkpoint(&weight), spec.clone(), imp)
        };
        let out = match &bias {
            None => record::<B, C, _, 2>(SpectralConvBackward::<2>, [&x, &weight], out, keep),
            Some(b) => record::<B, C, _, 3>(SpectralConvBackward::<3>, [&x, &weight, b], out, keep),
        };
        Ok((out, saved))
    }

    fn retained_spectrum_check(
        device: &Self::Device,
        x: (&[usize], DType),
        spec: &SpectralConvSpec,
        pass: Pass,
    ) -> Result<(), SpectralError> {
        B::retained_spectrum_check(device, x, spec, pass)
    }

    fn spectrum_to_grid_check(
        device: &Self::Device,
        s: (&[usize], DType),
        grid: &[usize],
        spec: &SpectralConvSpec,
        pass: Pass,
        precision: Precision,
    ) -> Result<(), SpectralError> {
        B::spectrum_to_grid_check(device, s, grid, spec, pass, precision)
    }

    fn retained_spectrum(
        x: FloatTensor<Self>,
        spec: &SpectralConvSpec,
        pass: Pass,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        retained_spectrum::<B, C>(x, spec, pass)
    }

    fn spectrum_to_grid(
        s: FloatTensor<Self>,
        grid: &[usize],
        spec: &SpectralConvSpec,
        pass: Pass,
        precision: Precision,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        spectrum_to_grid::<B, C>(s, grid, spec, pass, precision)
    }

    fn spectral_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<(FloatTensor<Self>, ModeBias)>,
        transforms: &ChainTransforms,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        spectral_chain::<B, C>(x, weights, mixes, bias, transforms)
    }

    fn spectral_conv_backward(
        _saved_x: FloatTensor<Self>,
        _x_shape: &[usize],
        _weight: FloatTensor<Self>,
        _grad_out: FloatTensor<Self>,
        _with_bias: bool,
        _spec: &SpectralConvSpec,
        _imp: SpectralImpl,
    ) -> Result<SpectralGrads<Self>, SpectralError> {
        Err(higher_order())
    }
}

fn higher_order() -> SpectralError {
    SpectralError::Unsupported("higher-order gradients of the spectral convolution".into())
}

#[derive(Debug)]
struct RetainedSpectrumBackward {
    grid: Vec<usize>,
    spec: SpectralConvSpec,
    pass: Pass,
    /// What the grid held (its gradient holds the same).
    precision: Precision,
}

impl<B: SpectralConvBackend> Backward<B, 1> for RetainedSpectrumBackward {
    type State = ();

    fn backward(self, ops: Ops<(), 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let g = grads.consume::<B>(&ops.node);
        if let Some(node) = &ops.parents[0] {
            let gx = B::spectrum_to_grid(g, &self.grid, &self.spec, flip(self.pass), self.precision)
                .unwrap_or_else(|e| panic!("retained spectrum backward: {e}"));
            grads.register::<B>(node.id, gx);
        }
    }
}

#[derive(Debug)]
struct SpectrumToGridBackward {
    spec: SpectralConvSpec,
    pass: Pass,
}

impl<B: SpectralConvBackend> Backward<B, 1> for SpectrumToGridBackward {
    type State = ();

    fn backward(self, ops: Ops<(), 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let g = grads.consume::<B>(&ops.node);
        if let Some(node) = &ops.parents[0] {
            let gs = B::retained_spectrum(g, &self.spec, flip(self.pass))
                .unwrap_or_else(|e| panic!("inverse transform backward: {e}"));
            grads.register::<B>(node.id, gs);
        }
    }
}

fn flip(pass: Pass) -> Pass {
    match pass {
        Pass::Forward => Pass::Adjoint,
        Pass::Adjoint => Pass::Forward,
        Pass::AdjointUnweighted => unreachable!("unweighted adjoints join no graph"),
    }
}

/// The unweighted adjoints have no adjoint of their own.
fn differentiable(pass: Pass) -> Result<(), SpectralError> {
    match pass {
        Pass::AdjointUnweighted => Err(SpectralError::Unsupported(
            "the unweighted adjoint transforms are not differentiable".into(),
        )),
        _ => Ok(()),
    }
}

fn retained_spectrum<B: SpectralConvBackend, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    spec: &SpectralConvSpec,
    pass: Pass,
) -> Result<FloatTensor<Autodiff<B, C>>, SpectralError> {
    differentiable(pass)?;
    let grid = x.primitive.shape().to_vec()[2..].to_vec();
    let out = B::retained_spectrum(x.primitive.clone(), spec, pass)?;
    let precision = precision_of(x.primitive.dtype())?;
    let op = RetainedSpectrumBackward {
        grid,
        spec: spec.clone(),
        pass,
        precision,
    };
    Ok(record::<B, C, _, 1>(op, [&x], out, |_| ()))
}

fn spectrum_to_grid<B: SpectralConvBackend, C: CheckpointStrategy>(
    s: FloatTensor<Autodiff<B, C>>,
    grid: &[usize],
    spec: &SpectralConvSpec,
    pass: Pass,
    precision: Precision,
) -> Result<FloatTensor<Autodiff<B, C>>, SpectralError> {
    differentiable(pass)?;
    let out = B::spectrum_to_grid(s.primitive.clone(), grid, spec, pass, precision)?;
    let op = SpectrumToGridBackward {
        spec: spec.clone(),
        pass,
    };
    Ok(record::<B, C, _, 1>(op, [&s], out, |_| ()))
}

/// The chain between the transforms as one node: its backward runs both
/// transforms without the last axis's bin weights, which cancel on the input's
/// path (the chain is per mode), and puts them on the weight gradients as a
/// CGEMM mode scale: two passes and their uploads fewer than three nodes.
#[derive(Debug)]
struct TransformedChainBackward {
    chain: ChainBackward,
    transforms: ChainTransforms,
    bins: Vec<f32>,
}

impl<B: SpectralConvBackend> Backward<B, 5> for TransformedChainBackward {
    type State = ChainState<B>;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let t = &self.transforms;
        let fail = |e: SpectralError| -> ! { panic!("spectral chain backward: {e}") };
        let g = grads.consume::<B>(&ops.node);
        let g_hat = B::retained_spectrum(g, &t.spec, Pass::AdjointUnweighted).unwrap_or_else(|e| fail(e));
        let (x_hat, weights, kept) = ops.state;
        let weights = weights.map(|id| checkpointer.retrieve_node_output(id));
        let wanted = wanted(&ops.parents);
        let [gx_hat, gw1, gw2, gw3, gbias] = chain_gradients::<B>(
            g_hat,
            self.chain.mixes,
            self.chain.bias_at,
            x_hat,
            weights,
            kept,
            wanted,
            &self.bins,
        );
        let gx = gx_hat.map(|s| {
            B::spectrum_to_grid(s, &t.input_grid, &t.spec, Pass::AdjointUnweighted, t.precision)
                .unwrap_or_else(|e| fail(e))
        });
        for (parent, grad) in ops.parents.iter().zip([gx, gw1, gw2, gw3, gbias]) {
            if let (Some(node), Some(grad)) = (parent, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// [`SpectralConvBackend::spectral_chain`] on `Autodiff<B>`: one node, or the
/// three ops where the grids weigh their last axis's bins differently (a
/// resized output keeping the input's Nyquist bin), which do not cancel.
fn spectral_chain<B: SpectralConvBackend, C: CheckpointStrategy>(
    x: FloatTensor<Autodiff<B, C>>,
    weights: [FloatTensor<Autodiff<B, C>>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(FloatTensor<Autodiff<B, C>>, ModeBias)>,
    t: &ChainTransforms,
) -> Result<FloatTensor<Autodiff<B, C>>, SpectralError> {
    let bins = t.spec.bin_weights(&t.output_grid);
    if bins != t.spec.bin_weights(&t.input_grid) {
        return spectral_chain_by_steps::<Autodiff<B, C>>(x, weights, mixes, bias, t);
    }
    let x_hat = B::retained_spectrum(x.primitive.clone(), &t.spec, Pass::Forward)?;
    let (bias, bias_at) = match bias {
        Some((b, at)) => (Some(b), Some(at)),
        None => (None, None),
    };
    let extras = ChainExtras {
        bias_at,
        keep: weights.iter().any(|w| w.is_tracked()),
        input_sum: None,
    };
    let out = B::mode_mix_chain(
        x_hat.clone(),
        weights.clone().map(|w| w.primitive),
        mixes,
        bias.as_ref().map(|b| b.primitive.clone()),
        extras,
    );
    let y = B::spectrum_to_grid(out.y, &t.output_grid, &t.spec, Pass::Forward, t.precision)?;
    let op = TransformedChainBackward {
        chain: ChainBackward { mixes, bias_at },
        transforms: t.clone(),
        bins,
    };
    Ok(record_chain::<B, C, _>(op, &x, x_hat, &weights, bias, out.kept, y))
}
