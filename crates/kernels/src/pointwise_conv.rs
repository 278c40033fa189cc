//! A 1×1 convolution over `[batch, channels, points]` tensors:
//! `Y[b, m, s] = Σ_k A[m, k] · X[b, k, s] + bias[m]`, with `A` the weight
//! (`[Cout, Cin]`, the forward) or its transpose (the input gradient) at any
//! strides.
//!
//! The points are the long, contiguous side, so a cube owns a block of up to
//! 64 rows by 256 points of one sample's output: it stages chunks of `A`'s
//! block (small, shared by every point) and of `X`'s rows in shared memory, and
//! every thread adds up to `8 × 8` products a term: its contiguous rows of `A`
//! and its points of `X`, both read as vectors of four where the points allow
//! (a multiple of four, buffers on 16 bytes). The contraction is short
//! (channels), so the kernel moves little more than `X` in and `Y` out.
//!
//! An [`Epilogue`] finishes the sums before they are stored, as an FNO block
//! needs them: a residual added (scaled per row by a gate where given), the
//! sums kept before GELU, GELU — each a pass over memory saved.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::activation::{cdf, gelu_cpu};
use crate::pairs::holds_pairs;
use crate::precision::{load_value, store_value, with_storage, Precision, Storage};

/// Threads along the points and the rows of the cube's block.
const POINT_THREADS: usize = 32;
const ROW_THREADS: usize = 8;
const THREADS: usize = POINT_THREADS * ROW_THREADS;
/// Points per thread, and so per cube (`8 · 32`).
const TILE_S: usize = 8;
const BLOCK_S: usize = TILE_S * POINT_THREADS;
/// Terms of the contraction staged at a time.
const CHUNK: usize = 16;

/// One convolution: `X` dense `[batch, k, points]`, `Y` dense `[batch, m,
/// points]`, `A` element `(m, k)` at `m·a_row + k·a_col`, and a bias of `m`
/// values when `bias` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointwiseConvProblem {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub points: usize,
    pub a_row: usize,
    pub a_col: usize,
    pub bias: bool,
}

/// Compile-time shape of the cube's block: `8·tile_m` rows by 256 points,
/// and the vector widths of the staged operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PointwiseConvConfig {
    /// Rows per thread: 1, 4 or 8.
    pub tile_m: usize,
    /// Floats per vector of `A`'s staged rows (`min(tile_m, 4)`).
    pub a_width: usize,
    /// Floats per vector of `X` and `Y` along the points: 4 or 1.
    pub x_width: usize,
}

/// What a launch does with its sums `Z` before it stores them: `Z += R`
/// (`R [batch, m, points]`, stored as `Y`), or `Z += gate[m] · R` (`m` f32
/// values); `Z` stored to `pre` as well (an autodiff node's GELU input); `Y =
/// gelu(Z)`. Sums and arithmetic in f32; the default stores `Z`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Epilogue<'a> {
    pub residual: Option<&'a Handle>,
    pub gate: Option<&'a Handle>,
    pub pre: Option<&'a Handle>,
    pub gelu: bool,
}

/// An [`Epilogue`]'s compile-time shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EpilogueConfig {
    pub residual: bool,
    pub gated: bool,
    pub keep_pre: bool,
    pub gelu: bool,
}

impl Epilogue<'_> {
    fn config(&self) -> EpilogueConfig {
        assert!(
            self.gate.is_none() || self.residual.is_some(),
            "a gate scales a residual, and there is none"
        );
        EpilogueConfig {
            residual: self.residual.is_some(),
            gated: self.gate.is_some(),
            keep_pre: self.pre.is_some(),
            gelu: self.gelu,
        }
    }
}

impl PointwiseConvConfig {
    fn block_m(&self) -> usize {
        ROW_THREADS * self.tile_m
    }
}

impl PointwiseConvProblem {
    /// Rows per thread enough to cover `m` with 8 row threads (1, 4 or 8);
    /// `X` and `Y` as vectors of four when `aligned` (their buffers start on
    /// 16 bytes) and every row holds whole vectors.
    pub fn config(&self, aligned: bool) -> PointwiseConvConfig {
        let tile_m = match self.m {
            0..=8 => 1,
            9..=32 => 4,
            _ => 8,
        };
        PointwiseConvConfig {
            tile_m,
            a_width: tile_m.min(4),
            x_width: if aligned && self.points.is_multiple_of(4) { 4 } else { 1 },
        }
    }

    /// Elements `A` must hold.
    pub(crate) fn a_extent(&self) -> usize {
        (self.m.max(1) - 1) * self.a_row + (self.k.max(1) - 1) * self.a_col + 1
    }

    /// Whether a launch writes anything, after checking that it brings a bias
    /// exactly when the problem has one.
    pub(crate) fn has_output(&self, bias: Option<&Handle>) -> bool {
        assert_eq!(
            bias.is_some(),
            self.bias,
            "a problem with a bias launches with its values, and only it"
        );
        self.batch * self.m * self.points != 0
    }

    /// Runs on a CubeCL device: `a`, `bias` hold f32 values, `x` values
    /// stored in `precision`, as the problem describes; writes `y` (as `x`),
    /// finished by `epilogue`. Products and sums run in f32.
    #[allow(clippy::too_many_arguments)]
    pub fn launch<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        precision: Precision,
        a: &Handle,
        x: &Handle,
        bias: Option<&Handle>,
        y: &Handle,
        epilogue: &Epilogue,
    ) {
        if !self.has_output(bias) {
            return;
        }
        let stored = precision.stored_on(client);
        with_storage!(stored, launch_typed, [], self, client, a, x, bias, y, epilogue)
    }
}

fn launch_typed<R: Runtime, S: Storage>(
    problem: &PointwiseConvProblem,
    client: &ComputeClient<R>,
    a: &Handle,
    x: &Handle,
    bias: Option<&Handle>,
    y: &Handle,
    epilogue: &Epilogue,
) {
    let p = problem;
    let value_bytes = size_of::<S::Elem>();
    let on_pairs = |h: Option<&Handle>| h.is_none_or(|h| holds_pairs(h, 2, value_bytes));
    let aligned = [Some(x), Some(y), epilogue.residual, epilogue.pre]
        .into_iter()
        .all(on_pairs);
    let cfg = p.config(aligned);
    let out_len = p.batch * p.m * p.points;
    let count = CubeCount::Static(
        p.points.div_ceil(BLOCK_S) as u32,
        p.m.div_ceil(cfg.block_m()) as u32,
        p.batch as u32,
    );
    let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
    // SAFETY: launched without bounds checks: staged loads are masked to
    // the problem (an index of 0 stands in for an invalid one; `X` holds at
    // least one value, as `k = 0` binds `A` in its place) and stores to
    // rows and points inside it.
    unsafe {
        pointwise_conv_kernel::launch_unchecked::<f32, S, R>(
            client,
            count,
            CubeDim::new_1d(THREADS as u32),
            cfg.a_width,
            cfg.x_width,
            arr(a, p.a_extent()),
            if p.k == 0 {
                arr(a, 1)
            } else {
                arr(x, p.batch * p.k * p.points)
            },
            match bias {
                Some(h) => arr(h, p.m),
                None => arr(a, 1),
            },
            arr(y, out_len),
            EpilogueInputsLaunch::new(
                arr(epilogue.residual.unwrap_or(y), out_len),
                match epilogue.gate {
                    Some(h) => arr(h, p.m),
                    None => arr(a, 1),
                },
            ),
            arr(epilogue.pre.unwrap_or(y), out_len),
            PointwiseDimsLaunch::new(p.m, p.k, p.points, p.a_row, p.a_col),
            cfg,
            p.bias,
            epilogue.config(),
        );
    }
}

impl PointwiseConvProblem {
    /// [`Epilogue`]'s oracle on the oracle's `y`: `(Z, gelu(Z))` or `(Z, Z)`.
    pub fn epilogue_cpu(
        &self,
        mut y: Vec<f64>,
        residual: Option<&[f64]>,
        gate: Option<&[f64]>,
        gelu: bool,
    ) -> (Vec<f64>, Vec<f64>) {
        if let Some(r) = residual {
            for (i, v) in y.iter_mut().enumerate() {
                let row = i / self.points % self.m;
                *v += gate.map_or(1.0, |g| g[row]) * r[i];
            }
        }
        let out = if gelu {
            y.iter().map(|&v| gelu_cpu(v)).collect()
        } else {
            y.clone()
        };
        (y, out)
    }
}

/// Point `j` (of `TILE_S`) of thread `tx` in a block of `BLOCK_S` points,
/// with `X` read `width` floats at a time: vectors of consecutive threads are
/// consecutive, so a warp's loads and stores stay dense.
#[cube]
fn point_of(tx: usize, #[comptime] j: usize, #[comptime] width: usize) -> usize {
    comptime![(j / width) * POINT_THREADS * width + j % width] + width * tx
}

/// The sizes of a 1×1 convolution (`m` outputs of `k` inputs at each of
/// `points` points) and `A`'s strides along its rows and columns.
#[derive(CubeLaunch, CubeType)]
pub(crate) struct PointwiseDims {
    pub m_len: usize,
    pub k_len: usize,
    pub points: usize,
    pub a_row: usize,
    pub a_col: usize,
}

/// What the epilogue reads: the residual it adds and the per-row gate that
/// scales it (either any array where the epilogue has none).
#[derive(CubeLaunch, CubeType)]
struct EpilogueInputs<F: Float, S: Storage, NX: Size> {
    residual: Array<Vector<S::Elem, NX>>,
    gate: Array<F>,
}

#[cube(launch_unchecked)]
fn pointwise_conv_kernel<F: Float, S: Storage, NA: Size, NX: Size>(
    a: &Array<F>,
    x: &Array<Vector<S::Elem, NX>>,
    bias: &Array<F>,
    y: &mut Array<Vector<S::Elem, NX>>,
    epilogue_in: &EpilogueInputs<F, S, NX>,
    pre: &mut Array<Vector<S::Elem, NX>>,
    dims: &PointwiseDims,
    #[comptime] cfg: PointwiseConvConfig,
    #[comptime] biased: bool,
    #[comptime] epilogue: EpilogueConfig,
) {
    let (residual, gate) = (&epilogue_in.residual, &epilogue_in.gate);
    let (m_len, k_len, points) = (dims.m_len, dims.k_len, dims.points);
    let (a_row, a_col) = (dims.a_row, dims.a_col);
    let tm = comptime![cfg.tile_m];
    let bm = comptime![cfg.block_m()];
    let (wa, wx) = comptime![(cfg.a_width, cfg.x_width)];
    // Staged A is term-major, `bm / wa` vectors of rows a term plus one of
    // padding, so the stores of consecutive terms (consecutive threads) spread
    // over the banks; staged X is term-major, `BLOCK_S / wx` vectors a term.
    let a_pitch = comptime![cfg.block_m() / cfg.a_width + 1];
    let x_pitch = comptime![BLOCK_S / cfg.x_width];
    let lane = UNIT_POS as usize;
    let (tx, ty) = (lane % POINT_THREADS, lane / POINT_THREADS);
    let s0 = CUBE_POS_X as usize * BLOCK_S;
    let m0 = CUBE_POS_Y as usize * bm;
    let sample = CUBE_POS_Z as usize;
    let x_base = sample * k_len * points;

    let mut smem_a = SharedMemory::<Vector<F, NA>>::new(comptime![CHUNK * (cfg.block_m() / cfg.a_width + 1)]);
    let mut smem_x = SharedMemory::<Vector<F, NX>>::new(comptime![CHUNK * BLOCK_S / cfg.x_width]);
    let mut acc = Array::<F>::new(comptime![cfg.tile_m * TILE_S]);
    let mut av = Array::<F>::new(tm);
    let mut xv = Array::<F>::new(TILE_S);
    #[unroll]
    for t in 0..comptime![cfg.tile_m * TILE_S] {
        acc[t] = F::new(0.0);
    }

    let mut k0 = 0;
    while k0 < k_len {
        // A's block: `bm / wa` vectors of `wa` rows, CHUNK terms.
        #[unroll]
        for t in 0..comptime![(cfg.block_m() / cfg.a_width * CHUNK).div_ceil(THREADS)] {
            let e = lane + t * THREADS;
            if comptime![(cfg.block_m() / cfg.a_width * CHUNK).is_multiple_of(THREADS)]
                || e < comptime![cfg.block_m() / cfg.a_width * CHUNK]
            {
                let (v, c) = (e / CHUNK, e % CHUNK);
                let mut rows = Vector::<F, NA>::empty();
                #[unroll]
                for q in 0..wa {
                    let r = m0 + v * wa + q;
                    let valid = r < m_len && k0 + c < k_len;
                    let at = select(valid, r * a_row + (k0 + c) * a_col, 0);
                    rows[q] = select(valid, a[at], F::new(0.0));
                }
                smem_a[c * a_pitch + v] = rows;
            }
        }
        // X's rows: CHUNK terms of BLOCK_S points, consecutive threads loading
        // consecutive vectors.
        #[unroll]
        for t in 0..comptime![CHUNK * BLOCK_S / cfg.x_width / THREADS] {
            let e = lane + t * THREADS;
            let (c, v) = (e / x_pitch, e % x_pitch);
            let valid = k0 + c < k_len && s0 + v * wx < points;
            let at = select(valid, (x_base + (k0 + c) * points + s0) / wx + v, 0);
            let stored = x[at];
            let mut values = Vector::<F, NX>::empty();
            #[unroll]
            for q in 0..wx {
                values[q] = select(valid, load_value::<F, S>(stored[q]), F::new(0.0));
            }
            smem_x[e] = values;
        }
        sync_cube();
        // A run-time loop over the chunk's terms: unrolled, the compiler hoists
        // the loads of many terms at once and runs out of registers.
        for c in 0..CHUNK {
            #[unroll]
            for v in 0..comptime![cfg.tile_m / cfg.a_width] {
                let rows = smem_a[c * a_pitch + ty * comptime![cfg.tile_m / cfg.a_width] + v];
                #[unroll]
                for q in 0..wa {
                    av[v * wa + q] = rows[q];
                }
            }
            #[unroll]
            for g in 0..comptime![TILE_S / cfg.x_width] {
                let values = smem_x[c * x_pitch + g * POINT_THREADS + tx];
                #[unroll]
                for q in 0..wx {
                    xv[g * wx + q] = values[q];
                }
            }
            #[unroll]
            for i in 0..tm {
                #[unroll]
                for j in 0..TILE_S {
                    acc[i * TILE_S + j] += av[i] * xv[j];
                }
            }
        }
        sync_cube();
        k0 += CHUNK;
    }

    let y_base = sample * m_len * points;
    #[unroll]
    for i in 0..tm {
        let r = m0 + ty * tm + i;
        if r < m_len {
            let offset = if comptime![biased] { bias[r] } else { F::new(0.0) };
            let scale = if comptime![epilogue.gated] {
                gate[r]
            } else {
                F::new(1.0)
            };
            #[unroll]
            for g in 0..comptime![TILE_S / cfg.x_width] {
                let s = s0 + point_of(tx, g * wx, wx);
                if s < points {
                    let at = (y_base + r * points + s) / wx;
                    let mut sums = Array::<F>::new(wx);
                    #[unroll]
                    for q in 0..wx {
                        sums[q] = acc[i * TILE_S + g * wx + q] + offset;
                    }
                    if comptime![epilogue.residual] {
                        let added = residual[at];
                        #[unroll]
                        for q in 0..wx {
                            sums[q] += scale * load_value::<F, S>(added[q]);
                        }
                    }
                    let mut out = Vector::<S::Elem, NX>::empty();
                    #[unroll]
                    for q in 0..wx {
                        out[q] = store_value::<F, S>(sums[q]);
                    }
                    if comptime![epilogue.keep_pre] {
                        pre[at] = out;
                    }
                    if comptime![epilogue.gelu] {
                        #[unroll]
                        for q in 0..wx {
                            out[q] = store_value::<F, S>(sums[q] * cdf::<F>(sums[q]));
                        }
                    }
                    y[at] = out;
                }
            }
        }
    }
}
