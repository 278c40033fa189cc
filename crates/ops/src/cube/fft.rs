//! The spectral convolution's transforms on `CubeBackend`: the truncated
//! rfftn (only the retained modes are written) and the zero-padded irfftn
//! (only the retained modes are read), planned once per shape and cached
//! ([`super::plan_cache`]).

use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::CubeRuntime;
use fno_kernels::fault::FaultTolerance;
use fno_kernels::fft::{DeviceFft, Direction, FftDesc, FftKind, ModeOrder, Norm, Planning};
use fno_kernels::precision::Precision;

use super::plan_cache::device_fft;
use super::tensor::{dtype_of, empty_of, row_pitched_shape};
use crate::rounding::precision_of;
use crate::spec::SpectralError;

fn fft_error(e: fno_kernels::fft::FftError) -> SpectralError {
    SpectralError::Unsupported(e.to_string())
}

fn run_plan<R: CubeRuntime>(
    desc: FftDesc,
    planning: Planning,
    input: &CubeTensor<R>,
) -> Result<CubeTensor<R>, SpectralError> {
    let fft = device_fft(&input.client, &input.device, desc, planning)?;
    execute(&fft, input)
}

fn execute<R: CubeRuntime>(fft: &DeviceFft<R>, input: &CubeTensor<R>) -> Result<CubeTensor<R>, SpectralError> {
    let mut out_shape = fft.plan().output_shape().to_vec();
    if fft.plan().output_is_complex() {
        out_shape.push(2);
    }
    let out = empty_of(input, out_shape, dtype_of(fft.output_stored()));
    fft.execute(&input.handle, &out.handle).map_err(fft_error)?;
    Ok(out)
}

fn spatial_axes(dims: usize) -> Vec<isize> {
    (0..dims as isize).map(|d| d - dims as isize).collect()
}

/// The truncated rfftn (`R2C`) over the trailing `modes.len()` dims of a real
/// tensor stored as `shape` (its logical `grid` cropping a pitch), or the
/// zero-padded irfftn (`C2R`) of a `shape` spectrum (without its (re, im) dim)
/// to `grid`; `precisions` (input, output), the non-last dims' modes in `order`.
pub(super) fn real_desc(
    kind: FftKind,
    shape: &[usize],
    grid: &[usize],
    modes: &[usize],
    (norm, order): (Norm, ModeOrder),
    precisions: (Precision, Precision),
    tolerance: FaultTolerance,
) -> FftDesc {
    let direction = match kind {
        FftKind::C2R => Direction::Inverse,
        _ => Direction::Forward,
    };
    FftDesc::new(shape, &spatial_axes(modes.len()), kind, direction)
        .modes(modes)
        .lengths(grid)
        .norm(norm)
        .mode_order(order)
        .precisions(precisions.0, precisions.1)
        .fault_tolerance(tolerance)
}

/// Truncated rfftn over the trailing `modes.len()` dims of a real `[.., *grid]`
/// tensor: `[.., *modes, 2]` in `spectrum` precision, the non-last dims' modes
/// in `order`. A row-pitched `x` is read in place, the pitch cropped by the
/// transform's length.
pub(super) fn truncated_rfft<R: CubeRuntime>(
    x: CubeTensor<R>,
    modes: &[usize],
    norm: Norm,
    order: ModeOrder,
    spectrum: Precision,
    (tolerance, planning): (FaultTolerance, Planning),
) -> Result<CubeTensor<R>, SpectralError> {
    let precisions = (precision_of(x.dtype)?, spectrum);
    let desc = |stored: &[usize], grid: &[usize]| {
        real_desc(FftKind::R2C, stored, grid, modes, (norm, order), precisions, tolerance)
    };
    let shape = x.meta.shape().to_vec();
    let grid = &shape[shape.len() - modes.len()..];
    if let Some(stored) = row_pitched_shape(&x) {
        let fft = device_fft(&x.client, &x.device, desc(&stored, grid), planning)?;
        // A view may end at its last row's end rather than its pitch's.
        if fft.plan().input_extent() * x.dtype.size() <= x.handle.size_in_used() as usize {
            return execute(&fft, &x);
        }
    }
    run_plan(desc(&shape, grid), planning, &into_contiguous(x))
}

/// Zero-padded irfftn of `[.., *modes, 2]` (non-last dims' modes in `order`)
/// holding `precisions.0` values back to `[.., *grid]` in `precisions.1`.
pub(super) fn padded_irfft<R: CubeRuntime>(
    s: &CubeTensor<R>,
    modes: &[usize],
    grid: &[usize],
    norm: Norm,
    order: ModeOrder,
    precisions: (Precision, Precision),
    (tolerance, planning): (FaultTolerance, Planning),
) -> Result<CubeTensor<R>, SpectralError> {
    let shape = s.meta.shape().to_vec();
    let logical = &shape[..shape.len() - 1];
    run_plan(
        real_desc(FftKind::C2R, logical, grid, modes, (norm, order), precisions, tolerance),
        planning,
        s,
    )
}
