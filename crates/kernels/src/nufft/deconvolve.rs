//! Deconvolution: each mode times `Π_d 1/φ̂(k_d)`, the kernel's Fourier
//! transform undone (after type 1's FFT, before type 2's).

use cubecl::prelude::*;
use cubecl::server::Handle;

use super::spread::{cube_count, cube_dim, grid_zyx};

/// The factor tables lie dimension after dimension, slowest first: z's
/// (where there is one) at 0, y's at `y_table`, x's at `x_table`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn deconvolve_kernel(
    input: &Array<f32>,
    factors: &Array<f32>,
    output: &mut Array<f32>,
    mz: usize,
    my: usize,
    mx: usize,
    y_table: usize,
    x_table: usize,
    #[comptime] dims: usize,
) {
    let pos = CUBE_POS * CUBE_DIM as usize + UNIT_POS as usize;
    if pos < output.len() / 2 {
        let mode = pos % (mz * my * mx);
        let ix = mode % mx;
        let iy = (mode / mx) % my;
        let iz = mode / (mx * my);
        let mut factor = factors[x_table + ix];
        if comptime![dims >= 2] {
            factor *= factors[y_table + iy];
        }
        if comptime![dims == 3] {
            factor *= factors[iz];
        }
        output[pos * 2] = input[pos * 2] * factor;
        output[pos * 2 + 1] = input[pos * 2 + 1] * factor;
    }
}

/// `output = input · factors` over `batch` vectors of `modes`, the factors
/// per dimension concatenated (slowest dimension first) in `factors`.
pub(super) fn deconvolve<R: Runtime>(
    client: &ComputeClient<R>,
    input: &Handle,
    factors: &Handle,
    output: &Handle,
    batch: usize,
    modes: &[usize],
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
            mz,
            my,
            mx,
            y_table,
            x_table,
            modes.len(),
        );
    }
}
