//! The kernel paths of the spectral convolution on `CubeBackend`.
//!
//! `Unfused`: truncated R2C (only the retained modes are written), the per-mode
//! CGEMM, zero-padded C2R (only the retained modes are read). No
//! full-resolution spectrum is ever materialised.
//!
//! `Fused`: the first spatial axis runs as one fused kernel, the axes after it
//! through the transforms around it ([`super::fused`]).
//!
//! The bias is a constant over each output channel's grid, i.e. one value at
//! frequency 0: both paths add it to that mode of the contracted spectrum (the
//! CGEMM's or the fused kernel's epilogue) instead of a pass over the output.
//!
//! Both backwards run the adjoint chain: the input gradient through the same
//! kernels with `conj(W)ᵀ`, the weight gradient as a per-mode CGEMM of the
//! saved input spectrum and the output gradient's spectrum, whose frequency 0
//! is also the bias gradient (the sum of the output gradient over the grid).

use burn::tensor::ops::{FloatTensor, FloatTensorOps};
use burn::tensor::{DType, Shape, Tensor, TensorMetadata, TensorPrimitive};
use burn_cubecl::element::BoolElement;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{CubeBackend, CubeRuntime, FloatElement, IntElement};
use cubecl::prelude::ComputeClient;
use fno_kernels::cgemm::{spectral, CgemmProblem, ModeBias, OperandPrecisions, Strides};
use fno_kernels::fault::{FaultCounts, FaultTolerance};
use fno_kernels::fft::{FftKind, ModeOrder, Norm};
use fno_kernels::precision::Precision;

use super::cgemm::cgemm;
use super::fft::{padded_irfft, real_desc, truncated_rfft};
use super::fused::{fused_all_axes, fused_descs, FusedPass};
use super::plan_cache::{device_fft, fault_counts, fused_problem};
use super::tensor::{cast_to, dtype_of, weight_operand};
use crate::matmul::precise_matmul;
use crate::reference::mode_mix::scale_bins;
use crate::rounding::precision_of;
use crate::spec::{
    adjoint_norm, hermitian_weights, SpectralConvSpec, SpectralError, SpectralImpl, SpectralShapes, WeightLayout,
    FORWARD_ORDER,
};
use crate::spectral::{DeviceMemory, Pass, SpectralConvBackend, SpectralGrads};

type Cube<R, F, I, BT> = CubeBackend<R, F, I, BT>;

/// `t` (`[B, C, *grid]`) as a Burn tensor `[B, C, points]`.
fn as_points<B: burn::tensor::backend::Backend>(t: FloatTensor<B>) -> Tensor<B, 3> {
    let shape = t.shape().to_vec();
    let points = shape[2..].iter().product();
    Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(t)).reshape([shape[0], shape[1], points])
}

/// What the kernel paths refuse of a forward with `x` and `weight` of these dtypes.
fn check_supported(
    x: DType,
    weight: DType,
    shapes: &SpectralShapes,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Result<(), SpectralError> {
    imp.check_kernel_path()?;
    imp.check_fault_tolerance(spec.fault_tolerance)?;
    let precisions = [precision_of(x)?, precision_of(weight)?, spec.spectrum_precision];
    if imp == SpectralImpl::Fused && precisions.iter().any(|&p| p != Precision::F32) {
        return Err(SpectralError::Unsupported(
            "the fused kernel runs in f32; half precision runs Unfused or Reference".into(),
        ));
    }
    shapes.check_kernel_layout(&spec.modes)
}

/// Everything the forward of `x` and `weight` (shapes, dtypes) can refuse on
/// `device`, checked without running it: shapes, dtypes, and its transforms,
/// planned (and cached for the run) now, as a dense x and weight lay them out.
fn check_forward<R: CubeRuntime>(
    client: &ComputeClient<R>,
    device: &R::Device,
    x: (&[usize], DType),
    weight: (&[usize], DType),
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
) -> Result<SpectralShapes, SpectralError> {
    let shapes = spec.shapes(x.0, weight.0)?;
    check_supported(x.1, weight.1, &shapes, spec, imp)?;
    let (b, ci, co) = (shapes.batch, shapes.in_channels, shapes.out_channels);
    let (modes, norm) = (&shapes.modes, spec.norm);
    let plan = |desc| device_fft(client, device, desc, spec.fft_planning).map(|_| ());
    let spectrum_of = |channels: usize, first: &[usize], later: &[usize]| {
        let mut shape = vec![b, channels];
        shape.extend(first.iter().chain(later));
        shape
    };
    if imp == SpectralImpl::Unfused {
        let (x_precision, spectrum) = (precision_of(x.1)?, spec.spectrum_precision);
        let tolerance = spec.fault_tolerance;
        let forward = (norm, FORWARD_ORDER);
        plan(real_desc(
            FftKind::R2C,
            x.0,
            &shapes.input,
            modes,
            forward,
            (x_precision, spectrum),
            tolerance,
        ))?;
        let y_hat = spectrum_of(co, &[], modes);
        let inverse = (norm, spec.inverse_order());
        plan(real_desc(
            FftKind::C2R,
            &y_hat,
            &shapes.output,
            modes,
            inverse,
            (spectrum, x_precision),
            tolerance,
        ))?;
        return Ok(shapes);
    }
    let later = &modes[1..];
    if !later.is_empty() {
        let f32s = (Precision::F32, Precision::F32);
        plan(real_desc(
            FftKind::R2C,
            x.0,
            &shapes.input[1..],
            later,
            (norm, FORWARD_ORDER),
            f32s,
            FaultTolerance::Off,
        ))?;
        let y_hat = spectrum_of(co, &shapes.output[..1], later);
        let inverse = (norm, spec.inverse_order());
        plan(real_desc(
            FftKind::C2R,
            &y_hat,
            &shapes.output[1..],
            later,
            inverse,
            f32s,
            FaultTolerance::Off,
        ))?;
    }
    let extents = [b, ci, shapes.input[0], co, shapes.output[0]];
    let (forward, inverse) = fused_descs(extents, modes, norm, (FORWARD_ORDER, spec.inverse_order()));
    let dense = spectral::dense_weight(co, shapes.mode_count(), spec.weights == WeightLayout::Shared);
    fused_problem(client, device, forward, inverse, dense)?;
    Ok(shapes)
}

/// The forward with `bias` added at its mode: the output and, if kept, the
/// retained spectrum of `x` (for the backward).
fn forward<R: CubeRuntime>(
    x: CubeTensor<R>,
    weight: CubeTensor<R>,
    bias: Option<(&CubeTensor<R>, ModeBias)>,
    shapes: &SpectralShapes,
    spec: &SpectralConvSpec,
    imp: SpectralImpl,
    keep_spectrum: bool,
) -> Result<(CubeTensor<R>, Option<CubeTensor<R>>), SpectralError> {
    let shared = spec.weights == WeightLayout::Shared;
    let (weight, weight_strides) = weight_operand(weight, shapes.out_channels, shapes.mode_count(), shared);
    if imp == SpectralImpl::Fused {
        let orders = (FORWARD_ORDER, spec.inverse_order());
        let weight = (&weight, weight_strides, false);
        let pass = FusedPass {
            out_channels: shapes.out_channels,
            modes: &shapes.modes,
            out_grid: &shapes.output,
            norm: spec.norm,
            orders,
            planning: spec.fft_planning,
            mode_scale: Vec::new(),
            keep_spectrum,
        };
        return fused_all_axes(x, weight, bias, pass);
    }

    let (x_precision, spectrum) = (precision_of(x.dtype)?, spec.spectrum_precision);
    let tolerance = spec.fault_tolerance;
    let checks = (tolerance, spec.fft_planning);
    let x_hat = truncated_rfft(x, &shapes.modes, spec.norm, FORWARD_ORDER, spectrum, checks)?;
    let mut y_shape = vec![shapes.batch, shapes.out_channels];
    y_shape.extend(&shapes.modes);
    y_shape.push(2);
    let problem = CgemmProblem {
        bias: bias.map(|(_, mode_bias)| mode_bias),
        precisions: OperandPrecisions {
            a: spectrum,
            b: precision_of(weight.dtype)?,
            c: spectrum,
        },
        ..spectral::forward(
            shapes.batch,
            shapes.in_channels,
            shapes.out_channels,
            shapes.mode_count(),
            weight_strides,
        )
    };
    let bias = bias.map(|(values, _)| values);
    let y_hat = cgemm(problem, &x_hat, &weight, y_shape, bias, tolerance)?;
    let y = padded_irfft(
        &y_hat,
        &shapes.modes,
        &shapes.output,
        spec.norm,
        spec.inverse_order(),
        (spectrum, x_precision),
        checks,
    )?;
    Ok((y, keep_spectrum.then_some(x_hat)))
}

impl<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement> SpectralConvBackend for Cube<R, F, I, BT> {
    fn device_memory(device: &Self::Device) -> Option<DeviceMemory> {
        let usage = R::client(device).memory_usage().ok()?;
        Some(DeviceMemory {
            in_use: usage.bytes_in_use,
            reserved: usage.bytes_reserved,
        })
    }

    fn fault_counts(device: &Self::Device) -> FaultCounts {
        fault_counts::<R>(&R::client(device), device)
    }

    fn spectral_conv_forward(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
        keep_saved: bool,
    ) -> Result<(FloatTensor<Self>, Option<FloatTensor<Self>>), SpectralError> {
        // The plans are built as the forward runs (`check_forward` builds them
        // ahead where Burn fusion defers the run).
        let shapes = spec.shapes(x.meta.shape(), weight.meta.shape())?;
        check_supported(x.dtype, weight.dtype, &shapes, spec, imp)?;
        // The kernels add f32 bias values.
        let bias = bias.map(|b| cast_to(into_contiguous(b), DType::F32));
        let mode_bias = shapes.dc_bias(spec.norm);
        let folded = bias.as_ref().zip(mode_bias);
        let (y, x_hat) = forward(x, weight, folded, &shapes, spec, imp, keep_saved)?;
        // Without a frequency-0 mode the bias is added over the output.
        let y = match bias.filter(|_| mode_bias.is_none()) {
            Some(bias) => {
                let shape = y.shape();
                let bias = Tensor::<Self, 1>::from_primitive(TensorPrimitive::Float(cast_to(bias, y.dtype)));
                let sum = as_points::<Self>(y) + bias.reshape([1, shapes.out_channels, 1]);
                Self::float_reshape(sum.into_primitive().tensor(), shape)
            }
            None => y,
        };
        Ok((y, x_hat))
    }

    fn storage_dtype(device: &Self::Device, precision: Precision) -> DType {
        dtype_of(precision.stored_on(&R::client(device)))
    }

    fn spectral_conv_check(
        device: &Self::Device,
        x: (&[usize], DType),
        weight: (&[usize], DType),
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<SpectralShapes, SpectralError> {
        check_forward(&R::client(device), device, x, weight, spec, imp)
    }

    fn retained_spectrum_check(
        device: &Self::Device,
        x: (&[usize], DType),
        spec: &SpectralConvSpec,
        pass: Pass,
    ) -> Result<(), SpectralError> {
        check_retained_spectrum::<R>(device, x, spec, pass)
    }

    fn spectrum_to_grid_check(
        device: &Self::Device,
        s: (&[usize], DType),
        grid: &[usize],
        spec: &SpectralConvSpec,
        pass: Pass,
        precision: Precision,
    ) -> Result<(), SpectralError> {
        check_spectrum_to_grid::<R>(device, s, grid, spec, pass, precision)
    }

    fn retained_spectrum(
        x: FloatTensor<Self>,
        spec: &SpectralConvSpec,
        pass: Pass,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        cube_retained_spectrum::<R, F, I, BT>(x, spec, pass)
    }

    fn spectrum_to_grid(
        s: FloatTensor<Self>,
        grid: &[usize],
        spec: &SpectralConvSpec,
        pass: Pass,
        precision: Precision,
    ) -> Result<FloatTensor<Self>, SpectralError> {
        cube_spectrum_to_grid::<R, F, I, BT>(s, grid, spec, pass, precision)
    }

    fn spectral_conv_backward(
        x_hat: FloatTensor<Self>,
        x_shape: &[usize],
        weight: FloatTensor<Self>,
        grad_out: FloatTensor<Self>,
        with_bias: bool,
        spec: &SpectralConvSpec,
        imp: SpectralImpl,
    ) -> Result<SpectralGrads<Self>, SpectralError> {
        if imp == SpectralImpl::Reference {
            return Err(SpectralError::Invalid(
                "no Reference backward on the kernel path".into(),
            ));
        }
        let shapes = spec.shapes(x_shape, weight.meta.shape())?;
        let shared = spec.weights == WeightLayout::Shared;
        let tolerance = spec.fault_tolerance;
        // The output gradient holds the output's precision, which is the input's.
        let (x_precision, w_precision, spectrum) = (
            precision_of(grad_out.dtype)?,
            precision_of(weight.dtype)?,
            spec.spectrum_precision,
        );
        let (weight, weight_strides) = weight_operand(weight, shapes.out_channels, shapes.mode_count(), shared);
        let (b, ci, co, k) = (
            shapes.batch,
            shapes.in_channels,
            shapes.out_channels,
            shapes.mode_count(),
        );
        let dims = shapes.spatial_dims();
        let m_last = shapes.modes[dims - 1];
        let adjoint = adjoint_norm(spec.norm);
        // Adjoint of the zero-padded irfftn: the truncated rfftn of the output
        // gradient (at the inverse's scale) with interior bins counted twice;
        // the CGEMMs apply those bin weights to their outputs. The input
        // gradient is ĝ·conj(W)ᵀ per mode, then the adjoint of the truncated
        // rfftn (a zero-padded irfftn at the forward's scale, interior bins
        // halved). Output and input bin weights cancel except at a Nyquist bin
        // that only one of the two grids has.
        let out_bins = hermitian_weights(m_last, shapes.output[dims - 1]);
        let in_bins = hermitian_weights(m_last, shapes.input[dims - 1]);
        let gx_scale: Vec<f32> = out_bins.iter().zip(&in_bins).map(|(o, i)| o / i).collect();
        // The bias gradient is the output gradient's sum over the grid: read at
        // frequency 0 of its spectrum, or summed where that mode is not kept.
        let mode_bias = shapes.dc_bias(spec.norm);
        let summed_bias = (with_bias && mode_bias.is_none()).then(|| {
            as_points::<Self>(cast_to(grad_out.clone(), DType::F32))
                .sum_dim(2)
                .sum_dim(0)
                .reshape([co])
        });
        let (grad_x, g_hat) = if imp == SpectralImpl::Fused {
            // conj(W)ᵀ: rows walk Cout, columns Cin.
            let transposed = Strides {
                row: weight_strides.col,
                col: weight_strides.row,
                mode: weight_strides.mode,
            };
            let weight = (&weight, transposed, true);
            let pass = FusedPass {
                out_channels: ci,
                modes: &shapes.modes,
                out_grid: &shapes.input,
                norm: adjoint,
                orders: (spec.inverse_order(), FORWARD_ORDER),
                planning: spec.fft_planning,
                mode_scale: gx_scale,
                keep_spectrum: true,
            };
            let (grad_x, g_hat) = fused_all_axes(grad_out, weight, None, pass)?;
            (grad_x, g_hat.expect("the fused backward keeps the gradient's spectrum"))
        } else {
            let g_hat = truncated_rfft(
                grad_out,
                &shapes.modes,
                adjoint,
                spec.inverse_order(),
                spectrum,
                (tolerance, spec.fft_planning),
            )?;
            let mut gx_shape = vec![b, ci];
            gx_shape.extend(&shapes.modes);
            gx_shape.push(2);
            let gx_problem = CgemmProblem {
                mode_scale: gx_scale,
                precisions: OperandPrecisions {
                    a: spectrum,
                    b: w_precision,
                    c: spectrum,
                },
                ..spectral::grad_input(b, ci, co, k, weight_strides)
            };
            let gx_hat = cgemm(gx_problem, &g_hat, &weight, gx_shape, None, tolerance)?;
            let grad_x = padded_irfft(
                &gx_hat,
                &shapes.modes,
                &shapes.input,
                adjoint,
                FORWARD_ORDER,
                (spectrum, x_precision),
                (tolerance, spec.fft_planning),
            )?;
            (grad_x, g_hat)
        };

        // Weight gradient per mode from conj(x̂) and ĝ (summed over modes when shared).
        let mut gw_shape = vec![ci, co];
        gw_shape.extend(&shapes.modes);
        gw_shape.push(2);
        let gw_problem = CgemmProblem {
            mode_scale: out_bins.clone(),
            precisions: OperandPrecisions {
                a: spectrum,
                b: spectrum,
                c: w_precision,
            },
            ..spectral::grad_weight(b, ci, co, k)
        };
        let grad_w = cgemm(gw_problem, &x_hat, &g_hat, gw_shape, None, tolerance)?;
        let grad_bias = match mode_bias.filter(|_| with_bias) {
            Some(ModeBias { mode, factor }) => {
                let g_hat = Tensor::<Self, 4>::from_primitive(TensorPrimitive::Float(Self::float_reshape(
                    cast_to(g_hat, DType::F32),
                    Shape::from([b, co, k, 2]),
                )));
                let real_dc = g_hat.slice([0..b, 0..co, mode..mode + 1, 0..1]).reshape([1, b, co]);
                // The sum over the batch as a product with ones: the GEMM splits a
                // long reduction among cubes (Burn's sum over a leading dim does not).
                let ones = Tensor::<Self, 3>::ones([1, 1, b], &real_dc.device());
                Some(precise_matmul(ones, real_dc).reshape([co]) * factor)
            }
            None => summed_bias,
        };
        let grad_w = if shared {
            let t: Tensor<Self, 3> = Tensor::from_primitive(TensorPrimitive::Float(Self::float_reshape(
                grad_w,
                Shape::from([ci * co, k, 2]),
            )));
            t.sum_dim(1).reshape([ci, co, 2]).into_primitive().tensor()
        } else {
            grad_w
        };

        Ok(SpectralGrads {
            x: grad_x,
            weight: grad_w,
            bias: grad_bias.map(|g| g.into_primitive().tensor()),
        })
    }
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
fn cube_retained_spectrum<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement>(
    x: CubeTensor<R>,
    spec: &SpectralConvSpec,
    pass: Pass,
) -> Result<CubeTensor<R>, SpectralError> {
    let shape = x.meta.shape().to_vec();
    let grid = shape[2..].to_vec();
    let (norm, order) = retained_transform(spec, pass);
    let precision = spec.spectrum_precision;
    let s = truncated_rfft(
        x,
        &spec.modes,
        norm,
        order,
        precision,
        (FaultTolerance::Off, spec.fft_planning),
    )?;
    let s = match pass {
        Pass::Forward | Pass::AdjointUnweighted => s,
        Pass::Adjoint => scale_bins::<CubeBackend<R, F, I, BT>>(s, spec.bin_weights(&grid), false),
    };
    let flat = modes_shape(shape[0], shape[1], &spec.modes, true);
    Ok(CubeBackend::<R, F, I, BT>::float_reshape(s, flat))
}

/// The kernel path's zero-padded inverse to `grid`: `Forward` at the
/// inverse's scale and order; `Adjoint` is the adjoint of the retained
/// spectrum (interior bins halved, then the inverse at the adjoint norm in the
/// forward's order).
fn cube_spectrum_to_grid<R: CubeRuntime, F: FloatElement, I: IntElement, BT: BoolElement>(
    s: CubeTensor<R>,
    grid: &[usize],
    spec: &SpectralConvSpec,
    pass: Pass,
    precision: Precision,
) -> Result<CubeTensor<R>, SpectralError> {
    let shape = s.meta.shape().to_vec();
    let s = CubeBackend::<R, F, I, BT>::float_reshape(s, modes_shape(shape[0], shape[1], &spec.modes, false));
    let (norm, order) = to_grid_transform(spec, pass);
    let s = match pass {
        Pass::Adjoint => scale_bins::<CubeBackend<R, F, I, BT>>(s, spec.bin_weights(grid), true),
        Pass::Forward | Pass::AdjointUnweighted => s,
    };
    let spectrum = precision_of(s.dtype)?;
    padded_irfft(
        &s,
        &spec.modes,
        grid,
        norm,
        order,
        (spectrum, precision),
        (FaultTolerance::Off, spec.fft_planning),
    )
}

/// The norm and mode order of the retained spectrum's transform: the
/// forward's, or (adjoints) those of the inverse it is the adjoint of.
fn retained_transform(spec: &SpectralConvSpec, pass: Pass) -> (Norm, ModeOrder) {
    match pass {
        Pass::Forward => (spec.norm, FORWARD_ORDER),
        Pass::Adjoint | Pass::AdjointUnweighted => (adjoint_norm(spec.norm), spec.inverse_order()),
    }
}

/// The norm and mode order of the zero-padded inverse's transform.
fn to_grid_transform(spec: &SpectralConvSpec, pass: Pass) -> (Norm, ModeOrder) {
    match pass {
        Pass::Forward => (spec.norm, spec.inverse_order()),
        Pass::Adjoint | Pass::AdjointUnweighted => (adjoint_norm(spec.norm), FORWARD_ORDER),
    }
}

/// [`SpectralConvBackend::retained_spectrum_check`] on `device`: `x` is
/// `[B, C, *grid]` for the spec's modes, and its transform plans.
fn check_retained_spectrum<R: CubeRuntime>(
    device: &R::Device,
    x: (&[usize], DType),
    spec: &SpectralConvSpec,
    pass: Pass,
) -> Result<(), SpectralError> {
    if x.0.len() != spec.modes.len() + 2 {
        return Err(SpectralError::Invalid(format!(
            "a retained spectrum of {:?} modes takes [B, C, *grid] of {} grid dims, got {:?}",
            spec.modes,
            spec.modes.len(),
            x.0
        )));
    }
    let (shape, modes) = (x.0, &spec.modes);
    let grid = &shape[shape.len() - modes.len()..];
    let precisions = (precision_of(x.1)?, spec.spectrum_precision);
    let transform = retained_transform(spec, pass);
    let desc = real_desc(
        FftKind::R2C,
        shape,
        grid,
        modes,
        transform,
        precisions,
        FaultTolerance::Off,
    );
    device_fft(&R::client(device), device, desc, spec.fft_planning).map(|_| ())
}

/// [`SpectralConvBackend::spectrum_to_grid_check`] on `device`: `s` is
/// `[B, C, K, 2]` for the spec's `K` modes, and its inverse to `grid` plans.
fn check_spectrum_to_grid<R: CubeRuntime>(
    device: &R::Device,
    (shape, dtype): (&[usize], DType),
    grid: &[usize],
    spec: &SpectralConvSpec,
    pass: Pass,
    precision: Precision,
) -> Result<(), SpectralError> {
    let modes: usize = spec.modes.iter().product();
    if shape.len() != 4 || shape[2] != modes || shape[3] != 2 || grid.len() != spec.modes.len() {
        return Err(SpectralError::Invalid(format!(
            "an inverse of {:?} modes to a grid of {grid:?} takes [B, C, {modes}, 2], got {shape:?}",
            spec.modes
        )));
    }
    let mut logical = shape[..2].to_vec();
    logical.extend(&spec.modes);
    let transform = to_grid_transform(spec, pass);
    let precisions = (precision_of(dtype)?, precision);
    let desc = real_desc(
        FftKind::C2R,
        &logical,
        grid,
        &spec.modes,
        transform,
        precisions,
        FaultTolerance::Off,
    );
    device_fft(&R::client(device), device, desc, spec.fft_planning).map(|_| ())
}
