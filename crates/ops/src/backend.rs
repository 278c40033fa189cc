//! The Burn backend extension: spectral convolution through our kernels.
//!
//! [`SpectralConvBackend`] is implemented for `CubeBackend` (wgpu, CUDA), for
//! `Autodiff<B>` of any backend that has it (the backward runs the adjoint chain
//! through the same kernels), and for the CPU backends, where the kernel paths
//! answer with an error naming the reference path.

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

use crate::graph::record;
use crate::mode_chain::{autodiff_spectral_chain, spectral_chain_by_steps, ChainTransforms};
use crate::mode_mix::{ModeMix, ModeMixBackend};
use crate::pointwise::PointwiseBackend;
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes};
use crate::spectrum::{autodiff_retained_spectrum, autodiff_spectrum_to_grid, Pass};

/// The gradients of one spectral convolution.
pub struct SpectralGrads<B: burn::tensor::backend::Backend> {
    pub x: FloatTensor<B>,
    pub weight: FloatTensor<B>,
    /// `Some` when the convolution had a bias.
    pub bias: Option<FloatTensor<B>>,
}

/// Device memory held by the calling thread's stream, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Bytes of live tensors.
    pub in_use: u64,
    /// Bytes the memory pools hold (they keep what they allocated: at the end
    /// of a run, the peak).
    pub reserved: u64,
}

/// A backend that runs the spectral convolution's kernel paths.
pub trait SpectralConvBackend: PointwiseBackend + ModeMixBackend {
    /// What the device's memory pools hold for this thread; `None` on backends
    /// without pools of their own (the CPU backends).
    fn device_memory(_device: &Self::Device) -> Option<DeviceMemory> {
        None
    }

    /// The faults the checked kernels on `device` detected, corrected and
    /// had injected since the process began
    /// ([`SpectralConvSpec::fault_tolerance`]); zero where nothing checks.
    /// Reads the device's counters: a sync.
    fn fault_counts(_device: &Self::Device) -> FaultCounts {
        FaultCounts::default()
    }

    /// The dtype of tensors that hold `precision` values on `device` (bf16
    /// may be held in f32 where a device has no bf16 buffers).
    fn storage_dtype(_device: &Self::Device, precision: Precision) -> DType {
        match precision {
            Precision::F32 => DType::F32,
            Precision::F16 => DType::F16,
            Precision::BF16 => DType::BF16,
        }
    }

    /// What [`Self::spectral_conv_forward`] of an `x` and `weight` of these
    /// shapes and dtypes would refuse on `device`, checked (its plans built)
    /// without running it: Burn's fusion client runs the forward later, where
    /// an error could only panic. Only the kernel paths have it.
    fn spectral_conv_check(
        device: &Self::Device,
        _x: (&[usize], DType),
        _weight: (&[usize], DType),
        _spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<SpectralShapes, SpectralError> {
        Err(no_kernels(&Self::name(device), imp))
    }

    /// `x: [B, Cin, *spatial]`, weight `[Cin, Cout, *modes, 2]` or `[Cin, Cout, 2]`,
    /// bias `[Cout]` (added to every output point; the kernels add it to the
    /// spectrum's frequency 0 instead of a pass over the output). Returns the
    /// output and, with `keep_saved`, what the backward needs of `x` (its
    /// retained spectrum), so training does not recompute it; inference does
    /// without (the fused kernel then never writes it).
    fn spectral_conv_forward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
        keep_saved: bool,
    ) -> Result<(FloatTensor<Self>, Option<FloatTensor<Self>>), SpectralError>;

    /// The retained spectrum `[B, C, K, 2]` of `x: [B, C, *grid]` for `spec`'s
    /// modes, or (`Adjoint`) the adjoint of [`Self::spectrum_to_grid`]
    /// ([`crate::spectrum`]). Only the kernel paths have it.
    fn retained_spectrum(
        _x: FloatTensor<Self>,
        _spec: &SpectralConvSpec,
        _pass: Pass,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        Err(no_transforms())
    }

    /// The spectrum `[B, C, K, 2]` zero-padded and transformed to `grid`
    /// holding `precision` values, or (`Adjoint`) the adjoint of
    /// [`Self::retained_spectrum`]. Only the kernel paths have it.
    fn spectrum_to_grid(
        _s: FloatTensor<Self>,
        _grid: &[usize],
        _spec: &SpectralConvSpec,
        _pass: Pass,
        _precision: Precision,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        Err(no_transforms())
    }

    /// `x: [B, C₀, *grid]` through its retained spectrum, three contractions
    /// with a bias at one mode ([`crate::mode_chain::mode_mix_chain`]) and the
    /// inverse to `transforms.output_grid`. On autodiff one node, whose
    /// backward spares the transforms' bin weights
    /// ([`crate::mode_chain::spectral_chain`]).
    fn spectral_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<(FloatTensor<Self>, ModeBias)>,
        transforms: &ChainTransforms,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        spectral_chain_by_steps::<Self>(x, weights, mixes, bias, transforms)
    }

    /// Gradients of `Σ grad_out ⊙ spectral_conv(x, weight, bias)` with respect
    /// to `x` (of shape `x_shape`), `weight` and, `with_bias`, the bias, from
    /// what the forward saved of `x`.
    #[allow(clippy::too_many_arguments)]
    fn spectral_conv_backward(
        saved_x: FloatTensor<Self>,
        x_shape: &[usize],
        weight: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        with_bias: bool,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<SpectralGrads<Self>, SpectralError>;
}

fn no_transforms() -> SpectralError {
    SpectralError::Unsupported(
        "the spectral transforms as ops of their own need a CubeCL backend (wgpu or cuda); use SpectralImpl::Reference"
            .into(),
    )
}

/// The error every backend without kernels gives for a kernel path.
pub fn no_kernels(backend: &str, imp: SpectralImpl) -> SpectralError {
    SpectralError::Unsupported(format!(
        "{imp:?} spectral convolution needs a CubeCL backend (wgpu or cuda); {backend} runs SpectralImpl::Reference"
    ))
}

#[allow(unused_macros)] // unused when no CPU backend feature is on
macro_rules! cpu_backend_without_kernels {
    ($ty:ty, $name:literal) => {
        impl SpectralConvBackend for $ty {
            fn spectral_conv_forward(
                _x: FloatTensor<Self>,
                _weight: FloatTensor<Self>,
                _bias: Option<FloatTensor<Self>>,
                _spec: &SpectralConvSpec,
                imp: SpectralImpl,
                _keep_saved: bool,
            ) -> Result<(FloatTensor<Self>, Option<FloatTensor<Self>>), SpectralError> {
                Err(no_kernels($name, imp))
            }

            fn spectral_conv_backward(
                _saved_x: FloatTensor<Self>,
                _x_shape: &[usize],
                _weight: FloatTensor<Self>,
                _grad_out: FloatTensor<Self>,
                _with_bias: bool,
                _spec: &SpectralConvSpec,
                imp: SpectralImpl,
            ) -> Result<SpectralGrads<Self>, SpectralError> {
                Err(no_kernels($name, imp))
            }
        }
    };
}

#[cfg(feature = "ndarray")]
cpu_backend_without_kernels!(burn::backend::NdArray<f32>, "ndarray");
#[cfg(feature = "ndarray")]
cpu_backend_without_kernels!(burn::backend::NdArray<f64>, "ndarray");
// Burn 0.21 deprecates its Candle backend but still ships it; we test on it.
#[cfg(feature = "candle")]
#[allow(deprecated)]
mod candle_impls {
    use super::*;
    cpu_backend_without_kernels!(burn::backend::Candle<f32, i64>, "candle");
    cpu_backend_without_kernels!(burn::backend::Candle<f64, i64>, "candle");
}

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

    fn retained_spectrum(
        x: FloatTensor<Self>,
        spec: &SpectralConvSpec,
        pass: Pass,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        autodiff_retained_spectrum::<B, C>(x, spec, pass)
    }

    fn spectrum_to_grid(
        s: FloatTensor<Self>,
        grid: &[usize],
        spec: &SpectralConvSpec,
        pass: Pass,
        precision: Precision,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        autodiff_spectrum_to_grid::<B, C>(s, grid, spec, pass, precision)
    }

    fn spectral_chain(
        x: FloatTensor<Self>,
        weights: [FloatTensor<Self>; 3],
        mixes: [ModeMix; 3],
        bias: Option<(FloatTensor<Self>, ModeBias)>,
        transforms: &ChainTransforms,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        autodiff_spectral_chain::<B, C>(x, weights, mixes, bias, transforms)
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
