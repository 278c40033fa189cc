//! The fused path on `CubeBackend`: the first spatial axis as one kernel
//! (truncated forward transform → per-mode contraction → zero-padded inverse,
//! [`fno_kernels::fused`]); the axes after it, if any, through the truncated
//! R2C before and the zero-padded C2R after, so only their retained modes
//! travel through global memory. In 1D the whole convolution is one kernel.

use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeRuntime;
use fno_kernels::cgemm::{ModeBias, Strides};
use fno_kernels::fault::FaultTolerance;
use fno_kernels::fft::{Direction, FftDesc, FftKind, ModeOrder, Norm, Planning};
use fno_kernels::fused::{FusedBuffers, PencilStrides};
use fno_kernels::precision::Precision;

use super::fft::{padded_irfft, truncated_rfft};
use super::plan_cache::fused_problem;
use super::tensor::empty;
use crate::spec::SpectralError;

/// What one run of the fused path computes besides its operands: the
/// contraction's output channels and modes, the output grid, the transforms'
/// norm and mode orders (forward, inverse), a scale per mode of the last axis
/// (empty: none), and whether to keep the spectrum the kernel contracts (the
/// weight gradient's operand).
pub(super) struct FusedPass<'a> {
    pub(super) out_channels: usize,
    pub(super) modes: &'a [usize],
    pub(super) out_grid: &'a [usize],
    pub(super) norm: Norm,
    pub(super) orders: (ModeOrder, ModeOrder),
    /// How the later axes' transforms are lowered.
    pub(super) planning: Planning,
    pub(super) mode_scale: Vec<f32>,
    pub(super) keep_spectrum: bool,
}

/// The fused kernel's two transforms along the first spatial axis of
/// `[batch, channels, n_in, *later modes]` (real in 1D, else the later axes'
/// spectrum) to `out_channels` and `n_out` positions; `modes` all axes'.
pub(super) fn fused_descs(
    [batch, channels, n_in, out_channels, n_out]: [usize; 5],
    modes: &[usize],
    norm: Norm,
    orders: (ModeOrder, ModeOrder),
) -> (FftDesc, FftDesc) {
    let inner: usize = modes[1..].iter().product();
    let kinds = if modes.len() == 1 {
        (FftKind::R2C, FftKind::C2R)
    } else {
        (FftKind::C2C, FftKind::C2C)
    };
    let forward = FftDesc::new(&[batch, channels, n_in, inner], &[2], kinds.0, Direction::Forward)
        .modes(&modes[..1])
        .norm(norm)
        .mode_order(orders.0);
    let inverse = FftDesc::new(
        &[batch, out_channels, modes[0], inner],
        &[2],
        kinds.1,
        Direction::Inverse,
    )
    .modes(&modes[..1])
    .lengths(&[n_out])
    .norm(norm)
    .mode_order(orders.1);
    (forward, inverse)
}

/// One fused convolution along the first spatial axis of `input` (`[B, C,
/// n_0, …]`, real in 1D, else the complex spectrum of the later axes with their
/// `inner` retained modes): forward transform of `modes[0]` modes, contraction
/// over C by `weight`, inverse to `out_grid[0]` positions, with `bias` added
/// at its mode. Returns the output and, if kept, the spectrum the kernel
/// contracted, `[B, C, *modes, 2]`.
fn fused_axis<R: CubeRuntime>(
    input: &CubeTensor<R>,
    weight: (&CubeTensor<R>, Strides, bool),
    bias: Option<(&CubeTensor<R>, ModeBias)>,
    pass: FusedPass<'_>,
) -> Result<(CubeTensor<R>, Option<CubeTensor<R>>), SpectralError> {
    let FusedPass {
        out_channels,
        modes,
        out_grid,
        norm,
        orders,
        mode_scale,
        keep_spectrum,
        ..
    } = pass;
    let shape = input.meta.shape().to_vec();
    let real = modes.len() == 1;
    let (batch, channels, n_in, n_out) = (shape[0], shape[1], shape[2], out_grid[0]);
    let inner: usize = modes[1..].iter().product();
    let parts = if real { 1 } else { 2 };
    let (forward, inverse) = fused_descs([batch, channels, n_in, out_channels, n_out], modes, norm, orders);
    let (weight, weight_strides, conj) = weight;
    let fused = fused_problem(&input.client, &input.device, forward, inverse, weight_strides)?;
    let mut problem = fused.problem.clone();
    problem.conj_weight = conj;
    problem.mode_scale = mode_scale;
    problem.bias = bias.map(|(_, mode_bias)| mode_bias);
    // Any strides of `input` serve (a row-pitched x is read in place).
    let strides = input.meta.strides().to_vec();
    problem.x = if real {
        PencilStrides {
            batch: strides[0],
            channel: strides[1],
            axis: strides[2],
            inner: 0,
        }
    } else {
        PencilStrides::dense(channels, n_in, inner, parts)
    };
    let input = if real {
        input.clone()
    } else {
        into_contiguous(input.clone())
    };
    let mut out_shape = vec![batch, out_channels, n_out];
    out_shape.extend(&modes[1..]);
    if !real {
        out_shape.push(2);
    }
    let out = empty(&input, out_shape);
    let spectrum = keep_spectrum.then(|| {
        let mut spectrum_shape = vec![batch, channels];
        spectrum_shape.extend(modes);
        spectrum_shape.push(2);
        empty(&input, spectrum_shape)
    });
    let buffers = FusedBuffers {
        x: &input.handle,
        weight: &weight.handle,
        y: &out.handle,
        spectrum: spectrum.as_ref().map(|s| &s.handle),
        bias: bias.map(|(values, _)| &values.handle),
    };
    problem.launch(&input.client, &fused.tables, buffers);
    Ok((out, spectrum))
}

/// The fused path over every spatial axis of `input` (`[B, C, *grid]`): in 1D
/// the fused kernel alone; otherwise the truncated R2C of the later axes
/// (their modes in the forward order), the fused kernel on the first, and the
/// zero-padded C2R of the later axes back to the output grid (inverse order).
/// Returns the output and, if kept, the spectrum the kernel contracted.
pub(super) fn fused_all_axes<R: CubeRuntime>(
    input: CubeTensor<R>,
    weight: (&CubeTensor<R>, Strides, bool),
    bias: Option<(&CubeTensor<R>, ModeBias)>,
    pass: FusedPass<'_>,
) -> Result<(CubeTensor<R>, Option<CubeTensor<R>>), SpectralError> {
    let (later, out_later) = (&pass.modes[1..], &pass.out_grid[1..]);
    let (norm, orders, planning) = (pass.norm, pass.orders, pass.planning);
    let input = if later.is_empty() {
        input
    } else {
        truncated_rfft(
            input,
            later,
            norm,
            orders.0,
            Precision::F32,
            (FaultTolerance::Off, planning),
        )?
    };
    let (out, spectrum) = fused_axis(&input, weight, bias, pass)?;
    let out = if later.is_empty() {
        out
    } else {
        padded_irfft(
            &out,
            later,
            out_later,
            norm,
            orders.1,
            (Precision::F32, Precision::F32),
            (FaultTolerance::Off, planning),
        )?
    };
    Ok((out, spectrum))
}
