//! The spectral convolution as a Burn backend extension.
//!
//! [`SpectralConvBackend`] runs neuraloperator's `SpectralConv` on a kernel
//! path (`Unfused`, `Fused`) and, for contractions that are not one per-mode
//! product (factorized weights, [`crate::factorized`]), its two transforms as
//! ops of their own: the retained spectrum of a real grid and its zero-padded
//! inverse, each differentiable, the backward of one being the other's adjoint
//! (spectra `[B, C, K, 2]`, the K retained modes flattened in the weight's
//! order), and [`spectral_chain`], a chain of three contractions between them.
//! [`spectral_conv`] runs the reference path ([`crate::reference::spectral`])
//! on any backend; the CPU backends have no kernel paths and answer with an
//! error naming it.

use burn::tensor::ops::FloatTensor;
use burn::tensor::{DType, Tensor, TensorPrimitive};
use fno_kernels::cgemm::ModeBias;
use fno_kernels::fault::FaultCounts;
use fno_kernels::precision::Precision;

use crate::mode_mix::{ChainExtras, ModeMix, ModeMixBackend};
use crate::pointwise::PointwiseBackend;
use crate::reference::spectral::{crop_weight, spectral_conv_reference};
use crate::spec::{SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes};

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
    /// (the transforms as ops of their own: [`retained_spectrum`]). Only the kernel paths have it.
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

    /// What [`Self::retained_spectrum`] of an `x` of this shape and dtype
    /// would refuse on `device`, its plan built now (Burn fusion runs the
    /// transform later). Only the kernel paths have it.
    fn retained_spectrum_check(
        _device: &Self::Device,
        _x: (&[usize], DType),
        _spec: &SpectralConvSpec,
        _pass: Pass,
    ) -> Result<(), SpectralError> {
        Err(no_transforms())
    }

    /// What [`Self::spectrum_to_grid`] of an `s` of this shape and dtype
    /// would refuse on `device`, checked as [`Self::retained_spectrum_check`].
    fn spectrum_to_grid_check(
        _device: &Self::Device,
        _s: (&[usize], DType),
        _grid: &[usize],
        _spec: &SpectralConvSpec,
        _pass: Pass,
        _precision: Precision,
    ) -> Result<(), SpectralError> {
        Err(no_transforms())
    }

    /// `x: [B, C₀, *grid]` through its retained spectrum, three contractions
    /// with a bias at one mode ([`crate::mode_mix::mode_mix_chain`]) and the
    /// inverse to `transforms.output_grid`. On autodiff one node, whose
    /// backward spares the transforms' bin weights
    /// ([`spectral_chain`]).
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

/// Which way a transform runs: as the convolution applies it, or as the
/// adjoint of the other transform (the backward).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    Forward,
    Adjoint,
    /// The adjoint's transform without the last axis's bin weights, for a
    /// caller that applies them elsewhere ([`spectral_chain`]'s chain
    /// between the transforms); not differentiable.
    AdjointUnweighted,
}

/// The transforms around a chain ([`spectral_chain`]): `spec` with the modes
/// the grids use, the input's and the output's grids, and the precision both
/// grids' values hold.
#[derive(Clone, Debug)]
pub struct ChainTransforms {
    pub spec: SpectralConvSpec,
    pub input_grid: Vec<usize>,
    pub output_grid: Vec<usize>,
    pub precision: Precision,
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

/// neuraloperator's spectral convolution through `imp`.
///
/// `x: [B, Cin, *spatial]` (1 to 3 spatial dims); `weight: [Cin, Cout, *modes, 2]`
/// (per mode) or `[Cin, Cout, 2]` (shared), complex as trailing (re, im);
/// `bias: [Cout]`. Returns `[B, Cout, *output]`.
pub fn spectral_conv<B: SpectralConvBackend, const D: usize, const W: usize>(
    x: Tensor<B, D>,
    weight: Tensor<B, W>,
    bias: Option<Tensor<B, 1>>,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Result<Tensor<B, D>, SpectralError> {
    if imp == SpectralImpl::Reference {
        imp.check_fault_tolerance(spec.fault_tolerance)?;
        return spectral_conv_reference(x, weight, bias, spec);
    }
    let shapes = spec.shapes(&x.dims(), &weight.dims())?;
    let f32_operands = x.dtype() == DType::F32 && weight.dtype() == DType::F32;
    let imp = imp.resolve(&shapes, spec, f32_operands);
    // The kernels see the weight this grid uses (neuraloperator's crop when the
    // grid holds fewer modes than the weight).
    let weight = crop_weight(weight, &shapes, spec);
    let used = SpectralConvSpec {
        modes: shapes.modes.clone(),
        ..spec.clone()
    };
    if let Some(bias) = &bias {
        if bias.dims()[0] != shapes.out_channels {
            return Err(SpectralError::Invalid(format!(
                "bias has {} entries for {} output channels",
                bias.dims()[0],
                shapes.out_channels
            )));
        }
    }
    let (y, _) = B::spectral_conv_forward(
        x.into_primitive().tensor(),
        weight.into_primitive().tensor(),
        bias.map(|b| b.into_primitive().tensor()),
        &used,
        imp,
        false,
    )?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(y)))
}

/// The retained spectrum `[B, C, K, 2]` of `x: [B, C, *grid]` for `spec`'s
/// modes (at most the grid's), with autodiff where `B` has it.
pub fn retained_spectrum<B: SpectralConvBackend, const D: usize>(
    x: Tensor<B, D>,
    spec: &SpectralConvSpec,
) -> Result<Tensor<B, 4>, SpectralError> {
    let s = B::retained_spectrum(x.into_primitive().tensor(), spec, Pass::Forward)?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(s)))
}

/// The spectrum `s: [B, C, K, 2]` placed in a zero spectrum and transformed
/// back to `grid` (`spec`'s output size) holding `precision` values, with
/// autodiff where `B` has it.
pub fn spectrum_to_grid<B: SpectralConvBackend, const D: usize>(
    s: Tensor<B, 4>,
    grid: &[usize],
    spec: &SpectralConvSpec,
    precision: Precision,
) -> Result<Tensor<B, D>, SpectralError> {
    let y = B::spectrum_to_grid(s.into_primitive().tensor(), grid, spec, Pass::Forward, precision)?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(y)))
}

/// `x: [B, C₀, *grid]` through its retained spectrum, the chain
/// ([`mode_mix_chain`](crate::mode_mix::mode_mix_chain)) and the inverse to `transforms.output_grid`; one node
/// on autodiff (see [`SpectralConvBackend::spectral_chain`]).
pub fn spectral_chain<B: SpectralConvBackend, const D: usize>(
    x: Tensor<B, D>,
    weights: [Tensor<B, 4>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(Tensor<B, 1>, ModeBias)>,
    transforms: &ChainTransforms,
) -> Result<Tensor<B, D>, SpectralError> {
    let bias = bias.map(|(t, at)| (t.into_primitive().tensor(), at));
    let weights = weights.map(|w| w.into_primitive().tensor());
    let y = B::spectral_chain(x.into_primitive().tensor(), weights, mixes, bias, transforms)?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(y)))
}

/// [`SpectralConvBackend::spectral_chain`] as its three ops.
pub(crate) fn spectral_chain_by_steps<B: SpectralConvBackend>(
    x: FloatTensor<B>,
    weights: [FloatTensor<B>; 3],
    mixes: [ModeMix; 3],
    bias: Option<(FloatTensor<B>, ModeBias)>,
    t: &ChainTransforms,
) -> Result<FloatTensor<B>, SpectralError> {
    let x_hat = B::retained_spectrum(x, &t.spec, Pass::Forward)?;
    let (bias, bias_at) = match bias {
        Some((b, at)) => (Some(b), Some(at)),
        None => (None, None),
    };
    let extras = ChainExtras {
        bias_at,
        keep: false,
        input_sum: None,
    };
    let y_hat = B::mode_mix_chain(x_hat, weights, mixes, bias, extras).y;
    B::spectrum_to_grid(y_hat, &t.output_grid, &t.spec, Pass::Forward, t.precision)
}
