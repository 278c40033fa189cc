//! Deconvolution: each mode times `Π_d 1/φ̂(k_d)`, the kernel's Fourier
//! transform undone (after type 1's FFT, before type 2's), and times the
//! run's scale (free here).

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::spread::{at, cube_count, cube_dim, grid_zyx};

/// The `mz × my × mx` modes of `batch` signals, where the y and x factors
/// start in the factor table, and the scale every factor carries.
#[derive(CubeLaunch, CubeType)]
struct DeconvolveSizes {
    mz: usize,
    my: usize,
    mx: usize,
    y_table: usize,
    x_table: usize,
    batch: usize,
    scale: f32,
}

/// The factor tables lie dimension after dimension, slowest first: z's
/// (where there is one) at 0, y's at `y_table`, x's at `x_table`.
#[cube(launch_unchecked)]
fn deconvolve_kernel(
    input: &Array<f32>,
    factors: &Array<f32>,
    output: &mut Array<f32>,
    sizes: &DeconvolveSizes,
    #[comptime] dims: usize,
    #[comptime] input_interleaved: bool,
    #[comptime] output_interleaved: bool,
) {
    let (mz, my, mx) = (sizes.mz, sizes.my, sizes.mx);
    let (y_table, x_table, batch, scale) = (sizes.y_table, sizes.x_table, sizes.batch, sizes.scale);
    let pos = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if pos < output.len() / 2 {
        let modes = mz * my * mx;
        let mode = pos % modes;
        let b = pos / modes;
        let ix = mode % mx;
        let iy = (mode / mx) % my;
        let iz = mode / (mx * my);
        let mut factor = factors[x_table + ix] * scale;
        if comptime![dims >= 2] {
            factor *= factors[y_table + iy];
        }
        if comptime![dims == 3] {
            factor *= factors[iz];
        }
        let from = at(b, mode, modes, batch, input_interleaved) * 2;
        let to = at(b, mode, modes, batch, output_interleaved) * 2;
        output[to] = input[from] * factor;
        output[to + 1] = input[from + 1] * factor;
    }
}

/// `output = input · factors · scale` over `batch` vectors of `modes`, the factors
/// per dimension concatenated (slowest dimension first) in `factors`; each
/// side `[batch, modes]` or interleaved `[modes, batch]` (the fine grid's
/// layout, [`super::plan::VectorSplit`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn deconvolve<R: Runtime>(
    client: &ComputeClient<R>,
    input: &Handle,
    factors: &Handle,
    output: &Handle,
    batch: usize,
    scale: f32,
    modes: &[usize],
    input_interleaved: bool,
    output_interleaved: bool,
) {
    let [mz, my, mx] = grid_zyx(modes);
    let floats = batch * mz * my * mx * 2;
    let y_table = if modes.len() == 3 { modes[0] } else { 0 };
    let x_table = modes[..modes.len() - 1].iter().sum();
    let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
    // SAFETY: modes below the buffers' lengths, table entries below Σ N_d.
    unsafe {
        deconvolve_kernel::launch_unchecked::<R>(
            client,
            cube_count(floats / 2),
            cube_dim(),
            arr(input, floats),
            arr(factors, modes.iter().sum()),
            arr(output, floats),
            DeconvolveSizesLaunch::new(mz, my, mx, y_table, x_table, batch, scale),
            modes.len(),
            input_interleaved,
            output_interleaved,
        );
    }
}
