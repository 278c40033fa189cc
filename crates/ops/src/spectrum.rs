//! The spectral convolution's two transforms as ops of their own, for
//! contractions that are not one per-mode product (factorized weights,
//! [`crate::factorized`]): the retained spectrum of a real grid and its
//! zero-padded inverse, each differentiable, the backward of one being the
//! other's adjoint. Spectra are `[B, C, K, 2]`, the K retained modes
//! flattened in the weight's order.
//!
//! On `CubeBackend` they are the kernel path's truncated R2C and zero-padded
//! C2R; other backends have no kernels and answer with an error (their
//! factorized convolutions run on the reference path).

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops};
use burn::backend::autodiff::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, FloatTensorOps};
use burn::tensor::{Shape, Tensor, TensorMetadata, TensorPrimitive};
use burn_cubecl::element::BoolElement;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use fno_kernels::fault::FaultTolerance;
use fno_kernels::precision::Precision;

use crate::backend::SpectralConvBackend;
use crate::cube_tensor::precision_of;
use crate::graph::record;
use crate::kernel_path::{padded_irfft, truncated_rfft};
use crate::rounding::in_dtype;
use crate::spec::{adjoint_norm, hermitian_weights, SpectralConvSpec, SpectralError, FORWARD_ORDER, INVERSE_ORDER};

/// Which way a transform runs: as the convolution applies it, or as the
/// adjoint of the other transform (the backward).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    Forward,
    Adjoint,
    /// The adjoint's transform without the last axis's bin weights, for a
    /// caller that applies them elsewhere ([`crate::mode_chain`]'s chain
    /// between the transforms); not differentiable.
    AdjointUnweighted,
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

/// `[.., m_last, 2]` spectra (or anything whose last dim but one repeats
/// `bins.len()` values) times (or over) a weight per bin of the last dim.
pub(crate) fn scale_bins<B: Backend>(s: FloatTensor<B>, bins: Vec<f32>, divide: bool) -> FloatTensor<B> {
    let shape = s.shape().to_vec();
    let m = bins.len();
    let rows = shape.iter().product::<usize>() / (2 * m);
    let s = Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(B::float_reshape(s, Shape::new([rows, m, 2]))));
    let w = Tensor::<B, 1>::from_floats(bins.as_slice(), &s.device()).reshape([1, m, 1]);
    let w = in_dtype(w, s.dtype());
    let scaled = if divide { s / w } else { s * w };
    B::float_reshape(scaled.into_primitive().tensor(), Shape::from(shape))
}

/// The adjoints' weights of `spec`'s last-axis bins on a grid `grid`: 1 at
/// frequency 0 and Nyquist, 2 between (a real inverse counts those twice).
pub(crate) fn bin_weights(spec: &SpectralConvSpec, grid: &[usize]) -> Vec<f32> {
    hermitian_weights(spec.modes[grid.len() - 1], grid[grid.len() - 1])
}

/// `[B, C, *modes, 2]` with the modes flattened, or back.
fn modes_shape(batch: usize, channels: usize, modes: &[usize], flat: bool) -> Shape {
    let mut shape = vec![batch, channels];
    if flat {
        shape.push(modes.iter().product());
    } else {
        shape.extend(modes);
    }
    shape.push(2);
    Shape::from(shape)
}

/// The kernel path's retained spectrum: `Forward` keeps the forward's modes
/// at its norm; `Adjoint` is the adjoint of [`cube_spectrum_to_grid`]'s
/// forward (the output gradient's spectrum at the adjoint norm in the inverse's
/// order, interior bins counted twice).
pub(crate) fn cube_retained_spectrum<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement>(
    x: CubeTensor<R>,
    spec: &SpectralConvSpec,
    pass: Pass,
) -> Result<CubeTensor<R>, SpectralError> {
    let shape = x.meta.shape().to_vec();
    let grid = shape[2..].to_vec();
    let (norm, order) = match pass {
        Pass::Forward => (spec.norm, FORWARD_ORDER),
        Pass::Adjoint | Pass::AdjointUnweighted => (adjoint_norm(spec.norm), INVERSE_ORDER),
    };
    let precision = spec.spectrum_precision;
    let s = truncated_rfft(x, &spec.modes, norm, order, precision, FaultTolerance::Off)?;
    let s = match pass {
        Pass::Forward | Pass::AdjointUnweighted => s,
        Pass::Adjoint => scale_bins::<CubeBackend<R, F, I, BT>>(s, bin_weights(spec, &grid), false),
    };
    let flat = modes_shape(shape[0], shape[1], &spec.modes, true);
    Ok(CubeBackend::<R, F, I, BT>::float_reshape(s, flat))
}

/// The kernel path's zero-padded inverse to `grid`: `Forward` at the
/// inverse's scale and order; `Adjoint` is the adjoint of the retained
/// spectrum (interior bins halved, then the inverse at the adjoint norm in the
/// forward's order).
pub(crate) fn cube_spectrum_to_grid<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement>(
    s: CubeTensor<R>,
    grid: &[usize],
    spec: &SpectralConvSpec,
    pass: Pass,
    precision: Precision,
) -> Result<CubeTensor<R>, SpectralError> {
    let shape = s.meta.shape().to_vec();
    let s = CubeBackend::<R, F, I, BT>::float_reshape(s, modes_shape(shape[0], shape[1], &spec.modes, false));
    let (norm, order, s) = match pass {
        Pass::Forward => (spec.norm, INVERSE_ORDER, s),
        Pass::Adjoint => {
            let s = scale_bins::<CubeBackend<R, F, I, BT>>(s, bin_weights(spec, grid), true);
            (adjoint_norm(spec.norm), FORWARD_ORDER, s)
        }
        Pass::AdjointUnweighted => (adjoint_norm(spec.norm), FORWARD_ORDER, s),
    };
    let spectrum = precision_of(s.dtype)?;
    padded_irfft(
        &s,
        &spec.modes,
        grid,
        norm,
        order,
        (spectrum, precision),
        FaultTolerance::Off,
    )
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

pub(crate) fn autodiff_retained_spectrum<B: SpectralConvBackend, C: CheckpointStrategy>(
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

pub(crate) fn autodiff_spectrum_to_grid<B: SpectralConvBackend, C: CheckpointStrategy>(
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
