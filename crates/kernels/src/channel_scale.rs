//! A per-channel scale of `[batch, channels, points]` values, `y[b, c, s] =
//! x[b, c, s] · scale[c]` (neuraloperator's soft-gating skip, and its input
//! gradient), one pass over memory: four floats a thread where the buffers
//! allow. As a framework's broadcasting multiply it reads one float a thread.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::pairs::four_wide;
use crate::precision::{load_value, store_value, with_storage, Precision, Storage};

const THREADS: usize = 256;

/// One scale: `x` and `y` dense `[batch, channels, points]`, `scale` `[channels]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelScaleProblem {
    pub batch: usize,
    pub channels: usize,
    pub points: usize,
}

#[cube(launch_unchecked)]
fn channel_scale_kernel<F: Float, S: Storage, N: Size>(
    x: &Array<Vector<S::Elem, N>>,
    scale: &Array<F>,
    y: &mut Array<Vector<S::Elem, N>>,
    channels: usize,
    points: usize,
    #[comptime] width: usize,
) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        // A vector never straddles two rows: `width` divides `points`.
        let c = (i * width / points) % channels;
        let (v, s) = (x[i], scale[c]);
        let mut out = Vector::<S::Elem, N>::empty();
        #[unroll]
        for q in 0..width {
            out[q] = store_value::<F, S>(load_value::<F, S>(v[q]) * s);
        }
        y[i] = out;
    }
}

impl ChannelScaleProblem {
    /// Values a thread: 4 when every row is whole vectors and `x`, `y` start
    /// on four values of `value_bytes`.
    pub fn width(&self, x: &Handle, y: &Handle, value_bytes: usize) -> usize {
        four_wide(self.points.is_multiple_of(4), &[x, y], value_bytes)
    }

    /// Runs on a CubeCL device: `x` holds values stored in `precision`,
    /// `scale` f32 values, as the problem describes; writes `y` (as `x`).
    pub fn launch<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        precision: Precision,
        x: &Handle,
        scale: &Handle,
        y: &Handle,
    ) {
        let stored = precision.stored_on(client);
        with_storage!(stored, launch_typed, [], self, client, [x, scale, y])
    }
}

fn launch_typed<R: Runtime, S: Storage>(
    problem: &ChannelScaleProblem,
    client: &ComputeClient<R>,
    [x, scale, y]: [&Handle; 3],
) {
    let len = problem.batch * problem.channels * problem.points;
    if len == 0 {
        return;
    }
    let width = problem.width(x, y, size_of::<S::Elem>());
    // SAFETY: every index is checked against the arrays' length in vectors,
    // and a channel index is taken modulo the channels.
    unsafe {
        channel_scale_kernel::launch_unchecked::<f32, S, R>(
            client,
            crate::grid::cube_count((len / width).div_ceil(THREADS)),
            CubeDim::new_1d(THREADS as u32),
            width,
            ArrayArg::from_raw_parts(x.clone(), len),
            ArrayArg::from_raw_parts(scale.clone(), problem.channels),
            ArrayArg::from_raw_parts(y.clone(), len),
            problem.channels,
            problem.points,
            width,
        );
    }
}

impl ChannelScaleProblem {}
