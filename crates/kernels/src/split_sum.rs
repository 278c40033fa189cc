//! The second pass of split reductions (the CGEMM's split-K, the 1×1
//! convolution's weight gradient): `C[p, q, k] = Σ_s partial[s, p, q, k]`
//! over dense partials, into `C` at any strides.
//!
//! A cube owns `cols` consecutive values of the partials and `rows` threads
//! per value, each summing every `rows`-th split with four loads in flight;
//! the rows meet in shared memory. Many splits into few values (512 partial
//! weight gradients of 64 values) so still spread over the whole GPU, and few
//! splits into many values waste no threads.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::cgemm::{span, Strides};

/// Threads per cube.
const THREADS: usize = 256;
/// Most threads sharing one value's splits.
const MAX_ROWS: usize = 32;

/// One sum: `splits` dense partials of `p × q × k` elements, `width` floats an
/// element (2 for complex), into `C` at `strides` (in elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitSumProblem {
    pub splits: usize,
    pub p: usize,
    pub q: usize,
    pub k: usize,
    pub width: usize,
    pub strides: Strides,
}

/// Threads per value (`rows`) and values per cube (`cols`): `rows · cols = 256`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitSumConfig {
    pub rows: usize,
    pub cols: usize,
}

impl SplitSumProblem {
    /// As many threads per value as splits, up to 32 (so at least 8
    /// consecutive values, one 32-byte sector, per load of a warp's row).
    pub fn config(&self) -> SplitSumConfig {
        let rows = self.splits.max(1).next_power_of_two().min(MAX_ROWS);
        SplitSumConfig {
            rows,
            cols: THREADS / rows,
        }
    }

    fn values(&self) -> usize {
        self.p * self.q * self.k * self.width
    }

    /// Elements `C` must hold.
    pub fn c_extent(&self) -> usize {
        span(self.strides, self.p, self.q, self.k)
    }

    /// Runs on a CubeCL device: `partial` holds `splits · p·q·k·width` f32s;
    /// writes `c`'s elements at the strides.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, partial: &Handle, c: &Handle) {
        let values = self.values();
        if values == 0 {
            return;
        }
        let cfg = self.config();
        // SAFETY: launched without bounds checks: loads are of values below
        // `p·q·k·width` of splits below `splits`, stores at the strides of
        // elements inside the problem.
        unsafe {
            split_sum_kernel::launch_unchecked::<f32, R>(
                client,
                CubeCount::Static(values.div_ceil(cfg.cols) as u32, 1, 1),
                CubeDim::new_1d(THREADS as u32),
                ArrayArg::from_raw_parts(partial.clone(), (self.splits * values).max(1)),
                ArrayArg::from_raw_parts(c.clone(), self.width * self.c_extent()),
                SplitSumLayoutLaunch::new(
                    self.q,
                    self.k,
                    self.strides.row,
                    self.strides.col,
                    self.strides.mode,
                    values,
                    self.splits,
                ),
                self.width,
                cfg,
            );
        }
    }
}

/// What a sum walks: `C`'s `q × k` elements a row at strides `c_p, c_q, c_k`,
/// and the partials, `values` floats each of `splits` splits.
#[derive(CubeLaunch, CubeType)]
struct SplitSumLayout {
    q_len: usize,
    k_len: usize,
    c_p: usize,
    c_q: usize,
    c_k: usize,
    values: usize,
    splits: usize,
}

#[cube(launch_unchecked)]
fn split_sum_kernel<F: Float>(
    partial: &Array<F>,
    c: &mut Array<F>,
    layout: &SplitSumLayout,
    #[comptime] width: usize,
    #[comptime] cfg: SplitSumConfig,
) {
    let (q_len, k_len, values, splits) = (layout.q_len, layout.k_len, layout.values, layout.splits);
    let (c_p, c_q, c_k) = (layout.c_p, layout.c_q, layout.c_k);
    let (rows, cols) = comptime![(cfg.rows, cfg.cols)];
    let lane = UNIT_POS as usize;
    let (col, row) = (lane % cols, lane / cols);
    let v = CUBE_POS_X as usize * cols + col;
    let (mut s0, mut s1, mut s2, mut s3) = (F::new(0.0), F::new(0.0), F::new(0.0), F::new(0.0));
    if v < values {
        // Four independent sums keep four loads in flight.
        let step = rows * values;
        let mut s = row;
        while s + 3 * rows < splits {
            let at = s * values + v;
            s0 += partial[at];
            s1 += partial[at + step];
            s2 += partial[at + 2 * step];
            s3 += partial[at + 3 * step];
            s += 4 * rows;
        }
        while s < splits {
            s0 += partial[s * values + v];
            s += rows;
        }
    }
    let mut shared = SharedMemory::<F>::new(THREADS);
    shared[lane] = (s0 + s1) + (s2 + s3);
    sync_cube();
    if row == 0 && v < values {
        let mut sum = shared[col];
        #[unroll]
        for r in 1..rows {
            sum += shared[r * cols + col];
        }
        let (e, f) = (v / width, v % width);
        let (p, q, k) = (e / (q_len * k_len), (e / k_len) % q_len, e % k_len);
        c[width * (p * c_p + q * c_q + k * c_k) + f] = sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(splits: usize) -> SplitSumProblem {
        SplitSumProblem {
            splits,
            p: 64,
            q: 64,
            k: 1,
            width: 1,
            strides: Strides {
                row: 64,
                col: 1,
                mode: 0,
            },
        }
    }

    #[test]
    fn threads_per_value_follow_the_splits_up_to_32() {
        assert_eq!(problem(1).config(), SplitSumConfig { rows: 1, cols: 256 });
        assert_eq!(problem(3).config(), SplitSumConfig { rows: 4, cols: 64 });
        assert_eq!(problem(512).config(), SplitSumConfig { rows: 32, cols: 8 });
    }
}
