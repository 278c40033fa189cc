//! Three complex products in a row, per mode, in one launch:
//! `Y_k = ((X_k·W₁(k))·W₂(k))·W₃(k)`, each `W` shared by every mode or one
//! per mode, read at its strides and conjugated as asked. A Tucker weight's
//! contraction is one (`x̂·U₀·C_k·U₁ᵀ`) and its input gradient another (the
//! adjoints in reverse), so the factorized convolution costs one launch where
//! three CGEMMs cost three launches and two round trips of the intermediates
//! through global memory (docs/factorized.md).
//!
//! A cube owns four consecutive modes and a tile of up to four batch rows. It
//! stages the tile of `X` in shared memory (modes fastest, so loads are
//! coalesced) and computes each step's tile from the last one there. A thread
//! owns one mode and a register tile of every row by four columns: each
//! weight value it loads (straight from global memory, consecutive lanes at
//! consecutive modes; a factor shared by every mode stays in cache) serves
//! all the rows. The steps' results can be written out too (the weights'
//! gradients need them), the last step adds a bias at one mode, and the
//! first can sum the input's real parts at one mode (the bias's gradient,
//! when the chain runs backward).

use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;

use super::kernel::{AtMode, AtModeLaunch};
use super::{span, ModeBias, Strides};

/// Consecutive modes per cube, one per lane.
const MODES: usize = 4;
/// Thread groups per mode, each owning `COLS` output columns of a pass.
const GROUPS: usize = 32;
const COLS: usize = 4;
const THREADS: usize = MODES * GROUPS;
/// Complex values a shared tile holds for all the cube's modes (16 KiB of f32
/// pairs; the cube has two).
const TILE_VALUES: usize = 2048;
/// Most batch rows per cube (each thread holds `rows · COLS` accumulators).
const MAX_ROWS: usize = 4;

/// One product of the chain: `out[b, n] = Σ_m in[b, m]·W[m, n]`, `W[m, n]`
/// read at `m·row + n·col + k·mode` (complex elements) and conjugated when `conj`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainStep {
    pub outputs: usize,
    pub strides: Strides,
    pub conj: bool,
}

/// A chain of three products over `modes` spectra of `batch` rows: `X` is
/// dense `[batch, inputs, modes]`, every result dense `[batch, outputs, modes]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainProblem {
    pub batch: usize,
    pub inputs: usize,
    pub modes: usize,
    pub steps: [ChainStep; 3],
    /// `Y[b, o, mode] += factor·bias[o]`.
    pub bias: Option<ModeBias>,
    /// Writes the first two steps' results.
    pub keep: bool,
    /// Writes `factor·Σ_b Re X[b, c, mode]` for each tile of batch rows
    /// (`[tiles, inputs]`, summed by the caller).
    pub input_sum: Option<ModeBias>,
}

/// Compile-time shape of a cube's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChainConfig {
    /// Batch rows per cube.
    pub rows: usize,
    /// Channels a row of a shared tile holds: the widest of `X` and the
    /// first two results, rounded up to 16.
    pub width: usize,
    pub conj: [bool; 3],
    pub keep: bool,
    pub biased: bool,
    pub input_sum: bool,
}

impl ChainProblem {
    /// Channels in and out of each step: `[inputs, n₁, n₂, n₃]`.
    pub fn channels(&self) -> [usize; 4] {
        [
            self.inputs,
            self.steps[0].outputs,
            self.steps[1].outputs,
            self.steps[2].outputs,
        ]
    }

    /// Whether a row of every tile fits in shared memory; where it does not,
    /// the caller runs the steps as separate CGEMMs.
    pub fn fits(&self) -> bool {
        self.width() * MODES <= TILE_VALUES && self.tiles() <= u16::MAX as usize
    }

    fn width(&self) -> usize {
        let [c0, c1, c2, _] = self.channels();
        c0.max(c1).max(c2).next_multiple_of(16)
    }

    pub fn config(&self) -> ChainConfig {
        let width = self.width();
        ChainConfig {
            rows: (TILE_VALUES / (MODES * width))
                .min(MAX_ROWS)
                .min(self.batch.next_power_of_two())
                .max(1),
            width,
            conj: self.steps.map(|s| s.conj),
            keep: self.keep,
            biased: self.bias.is_some(),
            input_sum: self.input_sum.is_some(),
        }
    }

    /// Tiles of batch rows (the cubes per mode).
    pub fn tiles(&self) -> usize {
        self.batch.div_ceil(self.config().rows)
    }

    /// Complex elements weight `i` spans at its strides.
    pub fn weight_extent(&self, i: usize) -> usize {
        let c = self.channels();
        span(self.steps[i].strides, c[i], c[i + 1], self.modes)
    }

    /// Runs on a CubeCL device. `x`, the weights and `bias` (f32, `[n₃]`) are
    /// read; `y` (`[batch, n₃, modes]`) is written, and where asked `kept`
    /// (the first two results) and `input_sum` (`[tiles, inputs]` f32).
    /// Buffers not asked for may be any handle.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, buffers: ChainBuffers<'_>) {
        let c = self.channels();
        if self.batch == 0 || self.modes == 0 || c.contains(&0) {
            return;
        }
        let cfg = self.config();
        let complex = |h: &Handle, values: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), 2 * values.max(1)) };
        let dense = |channels: usize| self.batch * channels * self.modes;
        let [s1, s2, s3] = self.steps.map(|s| s.strides);
        let bias = self.bias.unwrap_or(ModeBias { mode: 0, factor: 0.0 });
        let sum = self.input_sum.unwrap_or(ModeBias { mode: 0, factor: 0.0 });
        let kept = |i: usize| if self.keep { dense(c[i]) } else { 1 };
        // SAFETY: launched without bounds checks: every load is of a batch row
        // below `batch`, a channel below its step's count and a mode below
        // `modes` at the strides the extents above were sized by; stores
        // likewise, and only where asked.
        unsafe {
            chain_kernel::launch_unchecked::<f32, R>(
                client,
                CubeCount::Static(self.modes.div_ceil(MODES) as u32, self.tiles() as u32, 1),
                CubeDim::new_1d(THREADS as u32),
                complex(buffers.x, dense(c[0])),
                ChainDimsLaunch::new(self.batch, self.modes, c[0], c[1], c[2], c[3]),
                ChainWeightLaunch::new(
                    complex(buffers.weights[0], self.weight_extent(0)),
                    s1.row,
                    s1.col,
                    s1.mode,
                ),
                ChainWeightLaunch::new(
                    complex(buffers.weights[1], self.weight_extent(1)),
                    s2.row,
                    s2.col,
                    s2.mode,
                ),
                ChainWeightLaunch::new(
                    complex(buffers.weights[2], self.weight_extent(2)),
                    s3.row,
                    s3.col,
                    s3.mode,
                ),
                AtModeLaunch::new(
                    ArrayArg::from_raw_parts(buffers.bias.clone(), if self.bias.is_some() { c[3] } else { 1 }),
                    bias.mode,
                    bias.factor,
                ),
                ChainResultsLaunch::new(
                    complex(buffers.y, dense(c[3])),
                    complex(buffers.kept[0], kept(1)),
                    complex(buffers.kept[1], kept(2)),
                ),
                AtModeLaunch::new(
                    ArrayArg::from_raw_parts(
                        buffers.input_sum.clone(),
                        if self.input_sum.is_some() {
                            self.tiles() * c[0]
                        } else {
                            1
                        },
                    ),
                    sum.mode,
                    sum.factor,
                ),
                cfg,
            );
        }
    }
}

/// The buffers of a [`ChainProblem::launch`].
pub struct ChainBuffers<'a> {
    pub x: &'a Handle,
    pub weights: [&'a Handle; 3],
    pub bias: &'a Handle,
    pub y: &'a Handle,
    pub kept: [&'a Handle; 2],
    pub input_sum: &'a Handle,
}

/// The chain's sizes: batch rows, modes, and the channels into and out of each step.
#[derive(CubeLaunch, CubeType)]
struct ChainDims {
    batch: usize,
    modes: usize,
    c0: usize,
    c1: usize,
    c2: usize,
    c3: usize,
}

/// One step's weight (complex pairs) with its strides along rows, columns
/// and modes, in complex elements.
#[derive(CubeLaunch, CubeType)]
struct ChainWeight<F: Float> {
    values: Array<F>,
    row: usize,
    col: usize,
    mode: usize,
}

/// The results the chain writes: `Y` and, where kept, the first two steps'.
#[derive(CubeLaunch, CubeType)]
struct ChainResults<F: Float> {
    y: Array<F>,
    kept1: Array<F>,
    kept2: Array<F>,
}

/// Where a thread works: the cube's first batch row and the rows it holds,
/// the thread's mode `k`, and the chain's modes.
#[derive(CubeType, Clone, Copy)]
struct RowsAtMode {
    b0: usize,
    rows_here: usize,
    k: usize,
    modes: usize,
}

/// What a step does besides its product: conjugate the weight, write its
/// results to shared and/or global memory, add the bias.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct StepRole {
    conj: bool,
    to_shared: bool,
    to_global: bool,
    biased: bool,
}

/// One step of the chain for the cube's rows and modes: `out[b, n] = Σ_m
/// src[b, m]·W[m, n]`, in passes of `GROUPS · COLS` columns. A thread owns
/// one mode (its lane) and `COLS` columns `g, g + GROUPS, …` of every row,
/// so each weight value it loads serves all the rows and each staged value
/// all its columns. Results go to shared memory (`dst`) and/or to `out` in
/// global memory (`[batch, n_len, modes]`), with the bias at its mode.
#[cube]
#[allow(clippy::collapsible_if)]
fn step<F: Float + CubeElement>(
    src: &SharedMemory<F>,
    dst: &mut SharedMemory<F>,
    out: &mut Array<F>,
    w: &ChainWeight<F>,
    bias: &AtMode<F>,
    at: RowsAtMode,
    m_len: usize,
    n_len: usize,
    #[comptime] cfg: ChainConfig,
    #[comptime] role: StepRole,
) {
    let (b0, rows_here, k, modes) = (at.b0, at.rows_here, at.k, at.modes);
    let (conj, to_shared, to_global, biased) = comptime![(role.conj, role.to_shared, role.to_global, role.biased)];
    let (rows, width) = comptime![(cfg.rows, cfg.width)];
    let lane = UNIT_POS as usize % MODES;
    let group = UNIT_POS as usize / MODES;
    let sign = F::new(comptime![if conj { -1.0f32 } else { 1.0 }]);
    // Lanes past the last mode compute on a valid mode and store nothing.
    let k_read = select(k < modes, k, modes - 1);
    let mut acc_re = Array::<F>::new(comptime![rows * COLS]);
    let mut acc_im = Array::<F>::new(comptime![rows * COLS]);
    let mut ar = Array::<F>::new(rows);
    let mut ai = Array::<F>::new(rows);
    let mut wr = Array::<F>::new(COLS);
    let mut wi = Array::<F>::new(COLS);
    let mut n0 = 0;
    while n0 < n_len {
        #[unroll]
        for t in 0..comptime![rows * COLS] {
            acc_re[t] = F::new(0.0);
            acc_im[t] = F::new(0.0);
        }
        for m in 0..m_len {
            #[unroll]
            for b in 0..rows {
                let at = 2 * ((b * width + m) * MODES + lane);
                ar[b] = src[at];
                ai[b] = src[at + 1];
            }
            #[unroll]
            for j in 0..COLS {
                let n = n0 + group + j * GROUPS;
                let n_read = select(n < n_len, n, n_len - 1);
                let at = 2 * (m * w.row + n_read * w.col + k_read * w.mode);
                wr[j] = w.values[at];
                wi[j] = w.values[at + 1] * sign;
            }
            #[unroll]
            for b in 0..rows {
                #[unroll]
                for j in 0..COLS {
                    let t = b * COLS + j;
                    acc_re[t] += ar[b] * wr[j];
                    acc_re[t] -= ai[b] * wi[j];
                    acc_im[t] += ar[b] * wi[j];
                    acc_im[t] += ai[b] * wr[j];
                }
            }
        }
        #[unroll]
        for b in 0..rows {
            #[unroll]
            for j in 0..COLS {
                let n = n0 + group + j * GROUPS;
                let t = b * COLS + j;
                let mut re = acc_re[t];
                if comptime![biased] {
                    if k == bias.mode && n < n_len {
                        re += bias.factor * bias.values[n];
                    }
                }
                if n < n_len {
                    if comptime![to_shared] {
                        let at = 2 * ((b * width + n) * MODES + lane);
                        dst[at] = re;
                        dst[at + 1] = acc_im[t];
                    }
                    if comptime![to_global] {
                        if b < rows_here && k < modes {
                            let at = 2 * (((b0 + b) * n_len + n) * modes + k);
                            out[at] = re;
                            out[at + 1] = acc_im[t];
                        }
                    }
                }
            }
        }
        n0 += comptime![GROUPS * COLS];
    }
    sync_cube();
}

#[cube(launch_unchecked)]
#[allow(clippy::collapsible_if)]
fn chain_kernel<F: Float + CubeElement>(
    x: &Array<F>,
    dims: &ChainDims,
    w1: &ChainWeight<F>,
    w2: &ChainWeight<F>,
    w3: &ChainWeight<F>,
    bias: &AtMode<F>,
    results: &mut ChainResults<F>,
    input_sum: &mut AtMode<F>,
    #[comptime] cfg: ChainConfig,
) {
    let (batch, modes, c0, c1, c2, c3) = (dims.batch, dims.modes, dims.c0, dims.c1, dims.c2, dims.c3);
    let (rows, width) = comptime![(cfg.rows, cfg.width)];
    let k0 = CUBE_POS_X as usize * MODES;
    let tile_index = CUBE_POS_Y as usize;
    let b0 = tile_index * rows;
    let rows_here = select(batch - b0 < rows, batch - b0, rows);
    let k = k0 + UNIT_POS as usize % MODES;
    let mut tile_a = SharedMemory::<F>::new(comptime![2 * rows * width * MODES]);
    let mut tile_b = SharedMemory::<F>::new(comptime![2 * rows * width * MODES]);

    // X's rows of this tile at the cube's modes (modes fastest: coalesced),
    // zeros past the batch and the modes.
    let mut e = UNIT_POS as usize;
    while e < rows * c0 * MODES {
        let lane = e % MODES;
        let c = (e / MODES) % c0;
        let b = e / (MODES * c0);
        let valid = b < rows_here && k0 + lane < modes;
        let at = 2 * select(valid, ((b0 + b) * c0 + c) * modes + k0 + lane, 0);
        let to = 2 * ((b * width + c) * MODES + lane);
        tile_a[to] = select(valid, x[at], F::new(0.0));
        tile_a[to + 1] = select(valid, x[at + 1], F::new(0.0));
        e += comptime![THREADS];
    }
    sync_cube();
    if comptime![cfg.input_sum] {
        if input_sum.mode >= k0 && input_sum.mode < k0 + MODES {
            let mut c = UNIT_POS as usize;
            while c < c0 {
                let mut s = F::new(0.0);
                #[unroll]
                for b in 0..rows {
                    s += tile_a[2 * ((b * width + c) * MODES + input_sum.mode - k0)];
                }
                input_sum.values[tile_index * c0 + c] = input_sum.factor * s;
                c += comptime![THREADS];
            }
        }
    }
    let keep = comptime![cfg.keep];
    let at = RowsAtMode {
        b0,
        rows_here,
        k,
        modes,
    };
    step::<F>(
        &tile_a,
        &mut tile_b,
        &mut results.kept1,
        w1,
        bias,
        at,
        c0,
        c1,
        cfg,
        comptime![StepRole {
            conj: cfg.conj[0],
            to_shared: true,
            to_global: keep,
            biased: false,
        }],
    );
    step::<F>(
        &tile_b,
        &mut tile_a,
        &mut results.kept2,
        w2,
        bias,
        at,
        c1,
        c2,
        cfg,
        comptime![StepRole {
            conj: cfg.conj[1],
            to_shared: true,
            to_global: keep,
            biased: false,
        }],
    );
    step::<F>(
        &tile_a,
        &mut tile_b,
        &mut results.y,
        w3,
        bias,
        at,
        c2,
        c3,
        cfg,
        comptime![StepRole {
            conj: cfg.conj[2],
            to_shared: false,
            to_global: true,
            biased: cfg.biased,
        }],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(batch: usize, channels: [usize; 4]) -> ChainProblem {
        let step = |outputs| ChainStep {
            outputs,
            strides: Strides {
                row: outputs,
                col: 1,
                mode: 0,
            },
            conj: false,
        };
        ChainProblem {
            batch,
            inputs: channels[0],
            modes: 10,
            steps: [step(channels[1]), step(channels[2]), step(channels[3])],
            bias: None,
            keep: false,
            input_sum: None,
        }
    }

    #[test]
    fn tiles_follow_the_widest_shared_row() {
        // 64 channels: 4 rows of 4 modes in 16 KiB; the last step's width is free.
        let p = problem(70, [64, 24, 24, 1000]);
        assert_eq!((p.config().width, p.config().rows, p.tiles()), (64, 4, 18));
        // 130 channels round up to 144: 3 rows fit, the batch of 2 needs 2.
        let p = problem(2, [5, 130, 7, 3]);
        assert_eq!((p.config().width, p.config().rows, p.tiles()), (144, 2, 1));
        assert!(p.fits());
        // One row of 4 modes holds at most 512 channels.
        assert!(problem(8, [512, 8, 8, 8]).fits());
        assert!(!problem(8, [513, 8, 8, 8]).fits());
    }
}
