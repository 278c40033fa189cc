//! Batched complex GEMM over retained modes: `C[p, q, k] = Σ_r op(A[p, r, k]) · op(B[r, q, k])`
//! with independent strides, so one kernel serves the spectral convolution's
//! forward (`Y = X·W` per mode), its input gradient (`G·Wᴴ`), its weight gradient
//! (`Xᴴ·G`, summed over the batch) and TurboFNO's shared weight (a `k` stride of 0).
//!
//! Modes are the fastest-varying index of every FNO spectrum, so threads walk
//! `k` (coalesced loads of A, B and C) and each thread keeps a `TP × TQ` tile of
//! complex accumulators in registers, reusing each loaded value `TQ` or `TP` times.

use cubecl::prelude::*;
use cubecl::server::Handle;

/// Strides of a complex operand in complex elements: (row, column, mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    pub row: usize,
    pub col: usize,
    pub mode: usize,
}

/// One batched CGEMM: `P × Q` outputs per mode, `R` terms each, `K` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CgemmProblem {
    pub p: usize,
    pub q: usize,
    pub r: usize,
    pub k: usize,
    /// A indexed by (p, r, mode), B by (r, q, mode), C by (p, q, mode).
    pub a: Strides,
    pub b: Strides,
    pub c: Strides,
    pub conj_a: bool,
    pub conj_b: bool,
}

/// Compile-time shape of the register tile and the operand conjugations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CgemmConfig {
    pub tile_p: usize,
    pub tile_q: usize,
    pub conj_a: bool,
    pub conj_b: bool,
}

const MODE_THREADS: usize = 64;

#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn cgemm_kernel<F: Float>(
    a: &Array<F>,
    b: &Array<F>,
    c: &mut Array<F>,
    p_len: usize,
    q_len: usize,
    r_len: usize,
    k_len: usize,
    a_p: usize,
    a_r: usize,
    a_k: usize,
    b_r: usize,
    b_q: usize,
    b_k: usize,
    c_p: usize,
    c_q: usize,
    c_k: usize,
    #[comptime] cfg: CgemmConfig,
) {
    let k = CUBE_POS_X as usize * CUBE_DIM_X as usize + UNIT_POS_X as usize;
    if k >= k_len {
        terminate!();
    }
    let tp = comptime![cfg.tile_p];
    let tq = comptime![cfg.tile_q];
    let p0 = CUBE_POS_Y as usize * tp;
    let q0 = CUBE_POS_Z as usize * tq;

    let mut acc_re = Array::<F>::new(comptime![cfg.tile_p * cfg.tile_q]);
    let mut acc_im = Array::<F>::new(comptime![cfg.tile_p * cfg.tile_q]);
    #[unroll]
    for t in 0..comptime![cfg.tile_p * cfg.tile_q] {
        acc_re[t] = F::new(0.0);
        acc_im[t] = F::new(0.0);
    }
    let mut ar = Array::<F>::new(comptime![cfg.tile_p]);
    let mut ai = Array::<F>::new(comptime![cfg.tile_p]);
    let mut br = Array::<F>::new(comptime![cfg.tile_q]);
    let mut bi = Array::<F>::new(comptime![cfg.tile_q]);
    let a_sign = F::new(comptime![if cfg.conj_a { -1.0f32 } else { 1.0 }]);
    let b_sign = F::new(comptime![if cfg.conj_b { -1.0f32 } else { 1.0 }]);

    for r in 0..r_len {
        #[unroll]
        for i in 0..tp {
            let p = p0 + i;
            let at = 2 * (select(p < p_len, p, 0) * a_p + r * a_r + k * a_k);
            let valid = p < p_len;
            ar[i] = select(valid, a[at], F::new(0.0));
            ai[i] = select(valid, a[at + 1], F::new(0.0)) * a_sign;
        }
        #[unroll]
        for j in 0..tq {
            let q = q0 + j;
            let bt = 2 * (r * b_r + select(q < q_len, q, 0) * b_q + k * b_k);
            let valid = q < q_len;
            br[j] = select(valid, b[bt], F::new(0.0));
            bi[j] = select(valid, b[bt + 1], F::new(0.0)) * b_sign;
        }
        #[unroll]
        for i in 0..tp {
            #[unroll]
            for j in 0..tq {
                let t = i * tq + j;
                acc_re[t] += ar[i] * br[j] - ai[i] * bi[j];
                acc_im[t] += ar[i] * bi[j] + ai[i] * br[j];
            }
        }
    }
    #[unroll]
    for i in 0..tp {
        #[unroll]
        for j in 0..tq {
            let (p, q) = (p0 + i, q0 + j);
            if p < p_len && q < q_len {
                let ct = 2 * (p * c_p + q * c_q + k * c_k);
                c[ct] = acc_re[i * tq + j];
                c[ct + 1] = acc_im[i * tq + j];
            }
        }
    }
}

/// Largest register tile not wider than the problem (1, 2 or 4 per side).
fn tile_for(len: usize) -> usize {
    match len {
        0..=1 => 1,
        2..=3 => 2,
        _ => 4,
    }
}

fn span(s: Strides, rows: usize, cols: usize, modes: usize) -> usize {
    (rows.saturating_sub(1)) * s.row + (cols.saturating_sub(1)) * s.col + (modes.saturating_sub(1)) * s.mode + 1
}

impl CgemmProblem {
    /// Complex elements each operand must hold.
    pub fn extents(&self) -> (usize, usize, usize) {
        (
            span(self.a, self.p, self.r, self.k),
            span(self.b, self.r, self.q, self.k),
            span(self.c, self.p, self.q, self.k),
        )
    }

    /// Runs on a CubeCL device; buffers hold interleaved f32 complex values.
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, a: &Handle, b: &Handle, c: &Handle) {
        let (ea, eb, ec) = self.extents();
        let cfg = CgemmConfig {
            tile_p: tile_for(self.p),
            tile_q: tile_for(self.q),
            conj_a: self.conj_a,
            conj_b: self.conj_b,
        };
        let count = CubeCount::Static(
            self.k.div_ceil(MODE_THREADS) as u32,
            self.p.div_ceil(cfg.tile_p) as u32,
            self.q.div_ceil(cfg.tile_q) as u32,
        );
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), 2 * len) };
        cgemm_kernel::launch::<f32, R>(
            client,
            count,
            CubeDim::new_1d(MODE_THREADS as u32),
            arr(a, ea),
            arr(b, eb),
            arr(c, ec),
            self.p,
            self.q,
            self.r,
            self.k,
            self.a.row,
            self.a.col,
            self.a.mode,
            self.b.row,
            self.b.col,
            self.b.mode,
            self.c.row,
            self.c.col,
            self.c.mode,
            cfg,
        );
    }

    /// The CPU oracle (f64, interleaved complex), for tests.
    pub fn run_cpu(&self, a: &[f64], b: &[f64]) -> Vec<f64> {
        let (_, _, ec) = self.extents();
        let mut c = vec![0.0; 2 * ec];
        let sa = if self.conj_a { -1.0 } else { 1.0 };
        let sb = if self.conj_b { -1.0 } else { 1.0 };
        for k in 0..self.k {
            for p in 0..self.p {
                for q in 0..self.q {
                    let (mut re, mut im) = (0.0, 0.0);
                    for r in 0..self.r {
                        let ia = 2 * (p * self.a.row + r * self.a.col + k * self.a.mode);
                        let ib = 2 * (r * self.b.row + q * self.b.col + k * self.b.mode);
                        let (xr, xi) = (a[ia], sa * a[ia + 1]);
                        let (yr, yi) = (b[ib], sb * b[ib + 1]);
                        re += xr * yr - xi * yi;
                        im += xr * yi + xi * yr;
                    }
                    let ic = 2 * (p * self.c.row + q * self.c.col + k * self.c.mode);
                    c[ic] = re;
                    c[ic + 1] = im;
                }
            }
        }
        c
    }
}

/// The three contractions of a spectral convolution over spectra laid out
/// `[batch, channels, modes]` and weights `[Cin, Cout, modes]` (or `[Cin, Cout]`
/// when shared).
pub mod spectral {
    use super::{CgemmProblem, Strides};

    /// `Y[b, o, k] = Σ_i X[b, i, k] · W[i, o, k]`.
    pub fn forward(batch: usize, cin: usize, cout: usize, modes: usize, shared: bool) -> CgemmProblem {
        let wk = if shared { 0 } else { 1 };
        let wm = if shared { 1 } else { modes };
        CgemmProblem {
            p: batch,
            q: cout,
            r: cin,
            k: modes,
            a: Strides {
                row: cin * modes,
                col: modes,
                mode: 1,
            },
            b: Strides {
                row: cout * wm,
                col: wm,
                mode: wk,
            },
            c: Strides {
                row: cout * modes,
                col: modes,
                mode: 1,
            },
            conj_a: false,
            conj_b: false,
        }
    }

    /// `GX[b, i, k] = Σ_o G[b, o, k] · conj(W[i, o, k])`.
    pub fn grad_input(batch: usize, cin: usize, cout: usize, modes: usize, shared: bool) -> CgemmProblem {
        let wk = if shared { 0 } else { 1 };
        let wm = if shared { 1 } else { modes };
        CgemmProblem {
            p: batch,
            q: cin,
            r: cout,
            k: modes,
            a: Strides {
                row: cout * modes,
                col: modes,
                mode: 1,
            },
            b: Strides {
                row: wm,
                col: cout * wm,
                mode: wk,
            },
            c: Strides {
                row: cin * modes,
                col: modes,
                mode: 1,
            },
            conj_a: false,
            conj_b: true,
        }
    }

    /// `GW[i, o, k] = Σ_b conj(X[b, i, k]) · G[b, o, k]` (per mode; a shared
    /// weight's gradient is its sum over `k`).
    pub fn grad_weight(batch: usize, cin: usize, cout: usize, modes: usize) -> CgemmProblem {
        CgemmProblem {
            p: cin,
            q: cout,
            r: batch,
            k: modes,
            a: Strides {
                row: modes,
                col: cin * modes,
                mode: 1,
            },
            b: Strides {
                row: cout * modes,
                col: modes,
                mode: 1,
            },
            c: Strides {
                row: cout * modes,
                col: modes,
                mode: 1,
            },
            conj_a: true,
            conj_b: false,
        }
    }
}
