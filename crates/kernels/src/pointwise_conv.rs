//! A 1×1 convolution over `[batch, channels, points]` tensors:
//! `Y[b, m, s] = Σ_k A[m, k] · X[b, k, s] + bias[m]`, with `A` the weight
//! (`[Cout, Cin]`, the forward) or its transpose (the input gradient) at any
//! strides.
//!
//! The points are the long, contiguous side, so a cube owns a `BM × 128` block
//! of one sample's output: it stages chunks of `A`'s block (small, shared by
//! every point) and of `X`'s rows (consecutive threads loading consecutive
//! points) in shared memory, and every thread accumulates a `TM × 4` register
//! tile whose points are 32 apart, so a warp's loads and stores stay
//! consecutive. The contraction is short (channels), so the kernel moves little
//! more than `X` in and `Y` out.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::tile::{accumulate_outer_products, Walk};

/// Threads along the points and the rows of the cube's block.
const POINT_THREADS: usize = 32;
const ROW_THREADS: usize = 8;
const THREADS: usize = POINT_THREADS * ROW_THREADS;
/// Points per thread, and so per cube (`4 · 32`).
const TILE_S: usize = 4;
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

/// Compile-time shape of the cube's block: `8·tile_m` rows by 128 points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PointwiseConvConfig {
    pub tile_m: usize,
}

impl PointwiseConvConfig {
    fn block_m(&self) -> usize {
        ROW_THREADS * self.tile_m
    }
}

impl PointwiseConvProblem {
    /// Rows per thread: enough to cover `m` with 8 row threads, at most 8.
    pub fn config(&self) -> PointwiseConvConfig {
        PointwiseConvConfig {
            tile_m: self.m.div_ceil(ROW_THREADS).next_power_of_two().clamp(1, 8),
        }
    }

    /// Elements `A` must hold.
    fn a_extent(&self) -> usize {
        (self.m.max(1) - 1) * self.a_row + (self.k.max(1) - 1) * self.a_col + 1
    }

    /// Runs on a CubeCL device: `a`, `x`, `bias` hold f32 values as the
    /// problem describes; writes `y`.
    pub fn launch<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        a: &Handle,
        x: &Handle,
        bias: Option<&Handle>,
        y: &Handle,
    ) {
        assert_eq!(
            bias.is_some(),
            self.bias,
            "a problem with a bias launches with its values, and only it"
        );
        if self.batch * self.m * self.points == 0 {
            return;
        }
        let cfg = self.config();
        let count = CubeCount::Static(
            self.points.div_ceil(BLOCK_S) as u32,
            self.m.div_ceil(cfg.block_m()) as u32,
            self.batch as u32,
        );
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
        // SAFETY: launched without bounds checks: staged loads are masked to
        // the problem (an index of 0 stands in for an invalid one; `X` holds at
        // least one value, as `k = 0` binds `A` in its place) and stores to
        // rows and points inside it.
        unsafe {
            pointwise_conv_kernel::launch_unchecked::<f32, R>(
                client,
                count,
                CubeDim::new_1d(THREADS as u32),
                arr(a, self.a_extent()),
                if self.k == 0 {
                    arr(a, 1)
                } else {
                    arr(x, self.batch * self.k * self.points)
                },
                match bias {
                    Some(h) => arr(h, self.m),
                    None => arr(a, 1),
                },
                arr(y, self.batch * self.m * self.points),
                self.m,
                self.k,
                self.points,
                self.a_row,
                self.a_col,
                cfg,
                self.bias,
            );
        }
    }

    /// The CPU oracle (f64): `Y` dense `[batch, m, points]`.
    pub fn run_cpu(&self, a: &[f64], x: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
        let (m, k, n) = (self.m, self.k, self.points);
        let mut y = vec![0.0; self.batch * m * n];
        for b in 0..self.batch {
            for r in 0..m {
                let row = &mut y[(b * m + r) * n..][..n];
                if let Some(bias) = bias {
                    row.iter_mut().for_each(|v| *v = bias[r]);
                }
                for c in 0..k {
                    let w = a[r * self.a_row + c * self.a_col];
                    let xrow = &x[(b * k + c) * n..][..n];
                    row.iter_mut().zip(xrow).for_each(|(v, x)| *v += w * x);
                }
            }
        }
        y
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn pointwise_conv_kernel<F: Float>(
    a: &Array<F>,
    x: &Array<F>,
    bias: &Array<F>,
    y: &mut Array<F>,
    m_len: usize,
    k_len: usize,
    points: usize,
    a_row: usize,
    a_col: usize,
    #[comptime] cfg: PointwiseConvConfig,
    #[comptime] biased: bool,
) {
    let tm = comptime![cfg.tile_m];
    let bm = comptime![cfg.block_m()];
    // A's chunk is stored k-major with rows padded by one, so the stores of
    // consecutive k (consecutive threads) hit distinct banks.
    let a_pitch = comptime![cfg.block_m() + 1];
    let lane = UNIT_POS as usize;
    let (tx, ty) = (lane % POINT_THREADS, lane / POINT_THREADS);
    let s0 = CUBE_POS_X as usize * BLOCK_S;
    let m0 = CUBE_POS_Y as usize * bm;
    let sample = CUBE_POS_Z as usize;
    let x_base = sample * k_len * points;

    let mut smem_a = SharedMemory::<F>::new(comptime![CHUNK * (cfg.block_m() + 1)]);
    let mut smem_x = SharedMemory::<F>::new(comptime![CHUNK * BLOCK_S]);
    let mut acc = Array::<F>::new(comptime![cfg.tile_m * TILE_S]);
    let mut av = Array::<F>::new(tm);
    let mut xv = Array::<F>::new(TILE_S);
    #[unroll]
    for t in 0..comptime![cfg.tile_m * TILE_S] {
        acc[t] = F::new(0.0);
    }

    let mut k0 = 0;
    while k0 < k_len {
        // A's block: `bm` rows of CHUNK terms.
        #[unroll]
        for t in 0..comptime![(cfg.block_m() * CHUNK).div_ceil(THREADS)] {
            let e = lane + t * THREADS;
            if comptime![(cfg.block_m() * CHUNK).is_multiple_of(THREADS)] || e < comptime![cfg.block_m() * CHUNK] {
                let (r, c) = (e / CHUNK, e % CHUNK);
                let valid = m0 + r < m_len && k0 + c < k_len;
                let at = select(valid, (m0 + r) * a_row + (k0 + c) * a_col, 0);
                smem_a[c * a_pitch + r] = select(valid, a[at], F::new(0.0));
            }
        }
        // X's rows: CHUNK terms of BLOCK_S points.
        #[unroll]
        for t in 0..comptime![CHUNK * BLOCK_S / THREADS] {
            let e = lane + t * THREADS;
            let (c, s) = (e / BLOCK_S, e % BLOCK_S);
            let valid = k0 + c < k_len && s0 + s < points;
            let at = select(valid, x_base + (k0 + c) * points + s0 + s, 0);
            smem_x[e] = select(valid, x[at], F::new(0.0));
        }
        sync_cube();
        accumulate_outer_products::<F>(
            &smem_a,
            ty,
            &smem_x,
            tx,
            &mut av,
            &mut xv,
            &mut acc,
            comptime![Walk {
                term: cfg.block_m() + 1,
                step: ROW_THREADS
            }],
            comptime![Walk {
                term: BLOCK_S,
                step: POINT_THREADS
            }],
            CHUNK,
            tm,
            TILE_S,
        );
        sync_cube();
        k0 += CHUNK;
    }

    let y_base = sample * m_len * points;
    #[unroll]
    for i in 0..tm {
        let r = m0 + ty + i * ROW_THREADS;
        if r < m_len {
            let offset = if comptime![biased] { bias[r] } else { F::new(0.0) };
            #[unroll]
            for j in 0..TILE_S {
                let s = s0 + tx + j * POINT_THREADS;
                if s < points {
                    y[y_base + r * points + s] = acc[i * TILE_S + j] + offset;
                }
            }
        }
    }
}
