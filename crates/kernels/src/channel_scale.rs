//! A per-channel scale of `[batch, channels, points]` values, `y[b, c, s] =
//! x[b, c, s] · scale[c]` (neuraloperator's soft-gating skip, and its input
//! gradient), one pass over memory: four floats a thread where the buffers
//! allow. As a framework's broadcasting multiply it reads one float a thread.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::pairs::four_wide;

const THREADS: usize = 256;

/// One scale: `x` and `y` dense `[batch, channels, points]`, `scale` `[channels]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelScaleProblem {
    pub batch: usize,
    pub channels: usize,
    pub points: usize,
}

#[cube(launch_unchecked)]
fn channel_scale_kernel<F: Float, N: Size>(
    x: &Array<Vector<F, N>>,
    scale: &Array<F>,
    y: &mut Array<Vector<F, N>>,
    channels: usize,
    points: usize,
    #[comptime] width: usize,
) {
    let i = ABSOLUTE_POS;
    if i < x.len() {
        // A vector never straddles two rows: `width` divides `points`.
        let c = (i * width / points) % channels;
        y[i] = x[i] * Vector::new(scale[c]);
    }
}

impl ChannelScaleProblem {
    /// Floats a thread: 4 when every row is whole vectors and `x`, `y` start on 16 bytes.
    pub fn width(&self, x: &Handle, y: &Handle) -> usize {
        four_wide(self.points.is_multiple_of(4), &[x, y])
    }

    /// Runs on a CubeCL device: `x`, `scale` hold f32 values as the problem
    /// describes; writes `y`.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, x: &Handle, scale: &Handle, y: &Handle) {
        let len = self.batch * self.channels * self.points;
        if len == 0 {
            return;
        }
        let width = self.width(x, y);
        // SAFETY: every index is checked against the arrays' length in vectors,
        // and a channel index is taken modulo the channels.
        unsafe {
            channel_scale_kernel::launch_unchecked::<f32, R>(
                client,
                CubeCount::new_1d((len / width).div_ceil(THREADS) as u32),
                CubeDim::new_1d(THREADS as u32),
                width,
                ArrayArg::from_raw_parts(x.clone(), len),
                ArrayArg::from_raw_parts(scale.clone(), self.channels),
                ArrayArg::from_raw_parts(y.clone(), len),
                self.channels,
                self.points,
                width,
            );
        }
    }

    /// The CPU oracle (f64).
    pub fn run_cpu(&self, x: &[f64], scale: &[f64]) -> Vec<f64> {
        x.iter()
            .enumerate()
            .map(|(i, v)| v * scale[(i / self.points) % self.channels])
            .collect()
    }
}
