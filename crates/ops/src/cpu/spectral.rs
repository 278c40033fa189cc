//! The spectral convolution's kernel path on the CPU, on f32 host values:
//! the truncated rfftn and zero-padded irfftn through the shared FFT plan
//! ([`FftPlan::execute_threaded`]), the per-mode contractions as complex
//! GEMMs threaded over the modes ([`super::mode_gemm`]). The same plans,
//! orders and norms as `cube::spectral`, so the same results; the backend
//! layer moves values in and out.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::TensorMetadata;
use burn::tensor::{DType, Shape, Tensor, TensorData, TensorPrimitive};
use fno_kernels::cgemm::ModeBias;
use fno_kernels::fault::FaultTolerance;
use fno_kernels::fft::{Direction, FftDesc, FftKind, FftPlan, ModeOrder, Norm};
use fno_kernels::precision::Precision;
use num_complex::Complex;
use rayon::prelude::*;

use super::mode_gemm::{per_mode, Operand, Strides};
use super::{device_tensor, host};
use crate::spec::{
    adjoint_norm, hermitian_weights, SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes, WeightLayout,
    FORWARD_ORDER,
};
use crate::spectral::{Pass, SpectralGrads};

type C32 = Complex<f32>;

/// The forward's output `[B, Cout, *output]` and its retained input spectrum
/// `[B, Cin, K]` (what the backward reads).
pub struct Forward {
    pub y: Vec<f32>,
    pub x_hat: Vec<f32>,
}

/// The gradients of x, the weight (in its layout) and the bias.
pub struct Grads {
    pub x: Vec<f32>,
    pub weight: Vec<f32>,
    pub bias: Option<Vec<f32>>,
}

fn plan_error(e: fno_kernels::fft::FftError) -> SpectralError {
    SpectralError::Unsupported(e.to_string())
}

/// The truncated rfftn of `values: [lead.., *grid]` to `[lead.., *modes]` (complex, interleaved).
fn retained(
    values: &[f32],
    shape: &[usize],
    modes: &[usize],
    transform: (Norm, ModeOrder),
) -> Result<Vec<f32>, SpectralError> {
    let axes: Vec<isize> = (0..modes.len() as isize).map(|d| d - modes.len() as isize).collect();
    let desc = FftDesc::new(shape, &axes, FftKind::R2C, Direction::Forward)
        .modes(modes)
        .norm(transform.0)
        .mode_order(transform.1);
    FftPlan::new(desc)
        .map_err(plan_error)?
        .execute_threaded(values)
        .map_err(plan_error)
}

/// The zero-padded irfftn of `s: [lead.., *modes]` (complex) to `[lead.., *grid]`.
fn to_grid(
    s: &[f32],
    lead: &[usize],
    modes: &[usize],
    grid: &[usize],
    transform: (Norm, ModeOrder),
) -> Result<Vec<f32>, SpectralError> {
    let axes: Vec<isize> = (0..modes.len() as isize).map(|d| d - modes.len() as isize).collect();
    let shape = [lead, modes].concat();
    let desc = FftDesc::new(&shape, &axes, FftKind::C2R, Direction::Inverse)
        .modes(modes)
        .lengths(grid)
        .norm(transform.0)
        .mode_order(transform.1);
    FftPlan::new(desc)
        .map_err(plan_error)?
        .execute_threaded(s)
        .map_err(plan_error)
}

fn complex(values: &[f32]) -> Vec<C32> {
    values.chunks_exact(2).map(|c| C32::new(c[0], c[1])).collect()
}

fn interleaved(values: &[C32]) -> Vec<f32> {
    values.iter().flat_map(|c| [c.re, c.im]).collect()
}

/// A spectrum `[rows, channels, K]`'s per-mode matrices `rows × channels`.
fn rows_of(channels: usize, k: usize) -> Strides {
    Strides {
        mode: 1,
        row: channels * k,
        col: k,
    }
}

/// The weight's per-mode `[Cin, Cout]` matrices in `layout`, or (`transposed`) `[Cout, Cin]`.
fn weight_strides(layout: WeightLayout, co: usize, k: usize, transposed: bool) -> Strides {
    let (mode, i, o) = match layout {
        WeightLayout::PerMode => (1, co * k, k),
        WeightLayout::Shared => (0, co, 1),
    };
    match transposed {
        false => Strides { mode, row: i, col: o },
        true => Strides { mode, row: o, col: i },
    }
}

/// `x: [B, Cin, *input]`, the weight interleaved in `spec`'s layout; the bias
/// added at frequency 0 where the modes hold it, else over the output.
pub fn forward(
    x: &[f32],
    weight: &[f32],
    bias: Option<&[f32]>,
    shapes: &SpectralShapes,
    spec: &SpectralConvSpec,
) -> Result<Forward, SpectralError> {
    let (b, ci, co, k) = (
        shapes.batch,
        shapes.in_channels,
        shapes.out_channels,
        shapes.mode_count(),
    );
    let x_shape = [&[b, ci][..], &shapes.input].concat();
    // Spectra are held in the spec's precision, as the kernels store them.
    let held = spec.spectrum_precision;
    let x_hat = held.round(retained(x, &x_shape, &shapes.modes, (spec.norm, FORWARD_ORDER))?);
    let (xs, w) = (complex(&x_hat), complex(weight));
    let mode_bias = shapes.dc_bias(spec.norm);
    let mut y_hat = vec![C32::new(0.0, 0.0); b * co * k];
    per_mode(
        k,
        (b, ci, co),
        (&mut y_hat, rows_of(co, k)),
        Operand {
            values: &xs,
            at: rows_of(ci, k),
            conj: false,
        },
        Operand {
            values: &w,
            at: weight_strides(spec.weights, co, k, false),
            conj: false,
        },
        |_| 1.0,
    );
    if let (Some(bias), Some(ModeBias { mode, factor })) = (bias, mode_bias) {
        for (row, out) in y_hat.chunks_exact_mut(k).enumerate() {
            out[mode].re += bias[row % co] * factor;
        }
    }
    let mut y = to_grid(
        &held.round(interleaved(&y_hat)),
        &[b, co],
        &shapes.modes,
        &shapes.output,
        (spec.norm, spec.inverse_order()),
    )?;
    if let (Some(bias), None) = (bias, mode_bias) {
        let points: usize = shapes.output.iter().product();
        y.par_chunks_mut(points)
            .enumerate()
            .for_each(|(row, v)| v.iter_mut().for_each(|y| *y += bias[row % co]));
    }
    Ok(Forward { y, x_hat })
}

/// The backward of [`forward`] from its retained input spectrum `x_hat` and
/// the output gradient `grad_out: [B, Cout, *output]`.
pub fn backward(
    x_hat: &[f32],
    weight: &[f32],
    grad_out: &[f32],
    with_bias: bool,
    shapes: &SpectralShapes,
    spec: &SpectralConvSpec,
) -> Result<Grads, SpectralError> {
    let (b, ci, co, k) = (
        shapes.batch,
        shapes.in_channels,
        shapes.out_channels,
        shapes.mode_count(),
    );
    let dims = shapes.spatial_dims();
    let m_last = shapes.modes[dims - 1];
    let adjoint = adjoint_norm(spec.norm);
    // As on the kernel path: the output gradient's truncated rfftn at the
    // inverse's scale and order, interior last-axis bins counted twice by the
    // contractions (whose bin weights cancel but at a Nyquist bin one grid lacks).
    let g_shape = [&[b, co][..], &shapes.output].concat();
    let held = spec.spectrum_precision;
    let g_hat = retained(grad_out, &g_shape, &shapes.modes, (adjoint, spec.inverse_order()))?;
    let g_hat = complex(&held.round(g_hat));
    let out_bins = hermitian_weights(m_last, shapes.output[dims - 1]);
    let in_bins = hermitian_weights(m_last, shapes.input[dims - 1]);
    let (xs, w) = (complex(x_hat), complex(weight));

    let mut gx_hat = vec![C32::new(0.0, 0.0); b * ci * k];
    per_mode(
        k,
        (b, co, ci),
        (&mut gx_hat, rows_of(ci, k)),
        Operand {
            values: &g_hat,
            at: rows_of(co, k),
            conj: false,
        },
        Operand {
            values: &w,
            at: weight_strides(spec.weights, co, k, true),
            conj: true,
        },
        |mode| out_bins[mode % m_last] / in_bins[mode % m_last],
    );
    let x = to_grid(
        &held.round(interleaved(&gx_hat)),
        &[b, ci],
        &shapes.modes,
        &shapes.input,
        (adjoint, FORWARD_ORDER),
    )?;

    let mut gw = vec![C32::new(0.0, 0.0); ci * co * k];
    per_mode(
        k,
        (ci, b, co),
        (&mut gw, rows_of(co, k)),
        Operand {
            values: &xs,
            at: Strides {
                mode: 1,
                row: k,
                col: ci * k,
            },
            conj: true,
        },
        Operand {
            values: &g_hat,
            at: rows_of(co, k),
            conj: false,
        },
        |mode| out_bins[mode % m_last],
    );
    let weight = match spec.weights {
        WeightLayout::PerMode => interleaved(&gw),
        WeightLayout::Shared => interleaved(&gw.chunks_exact(k).map(|m| m.iter().sum()).collect::<Vec<C32>>()),
    };
    let bias = with_bias.then(|| bias_grad(&g_hat, grad_out, shapes, spec));
    Ok(Grads { x, weight, bias })
}

/// The bias gradient, the output gradient's sum over the batch and grid: read
/// at frequency 0 of its spectrum where the modes hold it, else summed.
fn bias_grad(g_hat: &[C32], grad_out: &[f32], shapes: &SpectralShapes, spec: &SpectralConvSpec) -> Vec<f32> {
    let (b, co, k) = (shapes.batch, shapes.out_channels, shapes.mode_count());
    let points: usize = shapes.output.iter().product();
    (0..co)
        .map(|o| match shapes.dc_bias(spec.norm) {
            Some(ModeBias { mode, factor }) => (0..b).map(|s| g_hat[(s * co + o) * k + mode].re).sum::<f32>() * factor,
            None => (0..b)
                .map(|s| grad_out[(s * co + o) * points..][..points].iter().sum::<f32>())
                .sum(),
        })
        .collect()
}

/// What the CPU path runs: either kernel path (one CPU computation), no
/// checksums, the weight cropped to the grid, non-last dims kept.
fn check_supported(imp: SpectralImpl, shapes: &SpectralShapes, spec: &SpectralConvSpec) -> Result<(), SpectralError> {
    imp.check_kernel_path()?;
    if spec.fault_tolerance != FaultTolerance::Off {
        return Err(SpectralError::Unsupported("checksums on the CPU; use Reference".into()));
    }
    shapes.check_kernel_layout(&spec.modes)
}

/// [`SpectralConvBackend::spectral_conv_check`] on a CPU backend.
///
/// [`SpectralConvBackend::spectral_conv_check`]: crate::SpectralConvBackend::spectral_conv_check
pub(crate) fn check(
    x: &[usize],
    weight: &[usize],
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Result<SpectralShapes, SpectralError> {
    let shapes = spec.shapes(x, weight)?;
    check_supported(imp, &shapes, spec)?;
    Ok(shapes)
}

/// [`SpectralConvBackend::spectral_conv_forward`] on a CPU backend `B`.
///
/// [`SpectralConvBackend::spectral_conv_forward`]: crate::SpectralConvBackend::spectral_conv_forward
pub(crate) fn backend_forward<B: Backend>(
    x: FloatTensor<B>,
    weight: FloatTensor<B>,
    bias: Option<FloatTensor<B>>,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
    keep_saved: bool,
) -> Result<(FloatTensor<B>, Option<FloatTensor<B>>), SpectralError> {
    let (device, dtype) = (B::float_device(&x), x.dtype());
    let (x, w) = (host::<B>(x), host::<B>(weight));
    let shapes = check(&x.shape, &w.shape, spec, imp)?;
    let bias = bias.map(host::<B>);
    let out = forward(&x, &w, bias.as_deref(), &shapes, spec)?;
    let y_shape = [&[shapes.batch, shapes.out_channels][..], &shapes.output].concat();
    let saved_shape = [shapes.batch, shapes.in_channels, shapes.mode_count(), 2];
    Ok((
        device_tensor::<B>(out.y, &y_shape, (&device, dtype)),
        keep_saved.then(|| device_tensor::<B>(out.x_hat, &saved_shape, (&device, DType::F32))),
    ))
}

/// [`SpectralConvBackend::spectral_conv_backward`] on a CPU backend `B`.
///
/// [`SpectralConvBackend::spectral_conv_backward`]: crate::SpectralConvBackend::spectral_conv_backward
pub(crate) fn backend_backward<B: Backend>(
    saved_x: FloatTensor<B>,
    x_shape: &[usize],
    weight: FloatTensor<B>,
    grad_out: FloatTensor<B>,
    with_bias: bool,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Result<SpectralGrads<B>, SpectralError> {
    let device = B::float_device(&grad_out);
    let (x_dtype, w_dtype) = (grad_out.dtype(), weight.dtype());
    let (x_hat, w, g) = (host::<B>(saved_x), host::<B>(weight), host::<B>(grad_out));
    let shapes = check(x_shape, &w.shape, spec, imp)?;
    let grads = backward(&x_hat, &w, &g, with_bias, &shapes, spec)?;
    Ok(SpectralGrads {
        x: device_tensor::<B>(grads.x, x_shape, (&device, x_dtype)),
        weight: device_tensor::<B>(grads.weight, &w.shape, (&device, w_dtype)),
        bias: grads
            .bias
            .map(|b| device_tensor::<B>(b, &[shapes.out_channels], (&device, w_dtype))),
    })
}

/// The last axis's bin weights applied to `s: [rows, K]` (complex,
/// interleaved), multiplied or divided.
fn weigh_bins(s: &mut [f32], bins: &[f32], divide: bool) {
    for (pair, &w) in s.chunks_exact_mut(2).zip(bins.iter().cycle()) {
        let w = if divide { 1.0 / w } else { w };
        pair[0] *= w;
        pair[1] *= w;
    }
}

/// [`SpectralConvBackend::retained_spectrum`] on a CPU backend: the kernel
/// path's transform and bin weights, spectra held in the spec's precision.
///
/// [`SpectralConvBackend::retained_spectrum`]: crate::SpectralConvBackend::retained_spectrum
pub(crate) fn backend_retained<B: Backend>(
    x: FloatTensor<B>,
    spec: &SpectralConvSpec,
    pass: Pass,
) -> Result<FloatTensor<B>, SpectralError> {
    let (device, dtype) = (B::float_device(&x), x.dtype());
    let x = host::<B>(x);
    let shape = x.shape.clone();
    check_retained(&shape, spec)?;
    let transform = match pass {
        Pass::Forward => (spec.norm, FORWARD_ORDER),
        Pass::Adjoint | Pass::AdjointUnweighted => (adjoint_norm(spec.norm), spec.inverse_order()),
    };
    let mut s = spec
        .spectrum_precision
        .round(retained(&x, &shape, &spec.modes, transform)?);
    if pass == Pass::Adjoint {
        weigh_bins(&mut s, &spec.bin_weights(&shape[2..]), false);
    }
    let k = spec.modes.iter().product();
    Ok(device_tensor::<B>(s, &[shape[0], shape[1], k, 2], (&device, dtype)))
}

/// [`SpectralConvBackend::spectrum_to_grid`] on a CPU backend, its values
/// rounded to `precision`.
///
/// [`SpectralConvBackend::spectrum_to_grid`]: crate::SpectralConvBackend::spectrum_to_grid
pub(crate) fn backend_to_grid<B: Backend>(
    s: FloatTensor<B>,
    grid: &[usize],
    spec: &SpectralConvSpec,
    pass: Pass,
    precision: Precision,
) -> Result<FloatTensor<B>, SpectralError> {
    let (device, dtype) = (B::float_device(&s), s.dtype());
    let s = host::<B>(s);
    let shape = s.shape.clone();
    check_to_grid(&shape, grid, spec)?;
    let mut s = s.into_vec();
    let transform = match pass {
        Pass::Forward => (spec.norm, spec.inverse_order()),
        Pass::Adjoint | Pass::AdjointUnweighted => (adjoint_norm(spec.norm), FORWARD_ORDER),
    };
    if pass == Pass::Adjoint {
        weigh_bins(&mut s, &spec.bin_weights(grid), true);
    }
    let y = precision.round(to_grid(&s, &shape[..2], &spec.modes, grid, transform)?);
    Ok(device_tensor::<B>(y, &[&shape[..2], grid].concat(), (&device, dtype)))
}

/// `x: [B, C, *grid]` for the spec's modes.
pub(crate) fn check_retained(x: &[usize], spec: &SpectralConvSpec) -> Result<(), SpectralError> {
    if x.len() != spec.modes.len() + 2 {
        return Err(SpectralError::Invalid(format!(
            "retained spectrum: {} modes for an input of shape {x:?} ([B, C, *grid])",
            spec.modes.len()
        )));
    }
    Ok(())
}

/// `s: [B, C, K, 2]` for the spec's modes and a grid of as many dims.
pub(crate) fn check_to_grid(s: &[usize], grid: &[usize], spec: &SpectralConvSpec) -> Result<(), SpectralError> {
    let k: usize = spec.modes.iter().product();
    if s.len() != 4 || s[2] != k || s[3] != 2 || grid.len() != spec.modes.len() {
        return Err(SpectralError::Invalid(format!(
            "spectrum to grid: a spectrum [B, C, {k}, 2] of modes {:?} to a {}-D grid, got {s:?}",
            spec.modes,
            grid.len()
        )));
    }
    Ok(())
}
