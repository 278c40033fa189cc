//! Direct DFTs of a few retained bins, as one real matrix product.
//!
//! When a transform keeps (or, inverse, reads) only a few of its bins, the
//! `P × Q` DFT matrix between the stored windows can cost fewer operations than
//! an FFT of the whole length — Bluestein's in particular, which runs two FFTs
//! of more than twice the length. The product is a GEMM, which a GPU runs far
//! nearer its arithmetic peak than shared-memory butterflies, and it reads the
//! input once and writes only the stored window, like the truncated FFT.
//!
//! Complex values enter as their real embedding: a complex factor `a + ib`
//! becomes the 2×2 block `[[a, -b], [b, a]]` between (re, im) pairs, a real input
//! keeps one column of it and a real output (C2R) one row. So every transform
//! kind is the same real product `out[s, p'] = Σ_q' A[q', p'] · in[s, q']` over
//! signals `s`, with the stored floats of one signal along the axis as `q'`.

use cubecl::prelude::*;

use crate::precision::{load_value, store_value, Storage};

use super::super::plan::{AxisKind, AxisStep};
use crate::tile::{accumulate_outer_products, OuterProducts, Walk};

/// Compile-time shape of a cube's block: `tile_p·threads_p` matrix rows by
/// `tile_s·threads_s` signals, the contraction staged `chunk` terms at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DftConfig {
    pub tile_p: usize,
    pub tile_s: usize,
    pub threads_p: usize,
    pub threads_s: usize,
    pub chunk: usize,
    /// Floats per stored entry along the axis: 2 for complex values, 1 for real.
    pub in_parts: usize,
    pub out_parts: usize,
    /// Consecutive signals are adjacent in memory (transforms over an inner
    /// axis): loads and stores walk signals fastest rather than the axis.
    pub signals_fastest: bool,
}

impl DftConfig {
    fn block_p(&self) -> usize {
        self.tile_p * self.threads_p
    }

    fn block_s(&self) -> usize {
        self.tile_s * self.threads_s
    }

    pub fn threads(&self) -> usize {
        self.threads_p * self.threads_s
    }

    /// Cubes covering `rows` matrix rows and `signals` signals.
    pub fn cubes(&self, rows: usize, signals: usize) -> usize {
        rows.div_ceil(self.block_p()) * signals.div_ceil(self.block_s())
    }

    /// The block shape for `rows` output floats per signal: register tiles of
    /// 4×4, a power of two of threads along the rows (at most 16), the rest of
    /// 256 threads along the signals but at most 64 (under 24 KiB of shared
    /// memory), the terms staged 16 at a time. Fitting the thread count to the
    /// rows exactly or staging more terms made row transforms slower
    /// (benches/results/2026-11-22_direct_dft_h100.md).
    pub fn for_problem(rows: usize, in_parts: usize, out_parts: usize, signals_fastest: bool) -> Self {
        const THREADS: usize = 256;
        const TILE: usize = 4;
        let tile_p = rows.clamp(1, TILE);
        let threads_p = rows.div_ceil(tile_p).next_power_of_two().min(16);
        DftConfig {
            tile_p,
            tile_s: TILE,
            threads_p,
            threads_s: (THREADS / threads_p).min(64),
            chunk: 16,
            in_parts,
            out_parts,
            signals_fastest,
        }
    }
}

/// The extents of a direct DFT launch: the output floats along the axis
/// (`p_len`), the input floats (`q_len`), the signals, and the signals of
/// the batch inside the axis.
#[derive(CubeLaunch, CubeType, Clone, Copy)]
pub struct DftExtents {
    pub p_len: usize,
    pub q_len: usize,
    pub signals: usize,
    pub inner: usize,
}

/// A tensor's strides, in floats, around and along the transformed axis: of
/// the batch outside the axis, of the batch inside it, and of the axis.
#[derive(CubeLaunch, CubeType, Clone, Copy)]
pub struct SignalStrides {
    pub outer: usize,
    pub inner: usize,
    pub axis: usize,
}

/// Address of float `f` (of the `parts`-float entries along the axis) of signal
/// `s`; signal `s` is `(s / inner, s % inner)` of the batch around the axis.
#[cube]
fn address(s: usize, f: usize, inner: usize, strides: SignalStrides, #[comptime] parts: usize) -> usize {
    (s / inner) * strides.outer + (s % inner) * strides.inner + (f / parts) * strides.axis + f % parts
}

/// `output[s, p] = Σ_q matrix[q, p] · input[s, q]` for `p < p_len`, `q < q_len`
/// (floats along the axis) and `s < signals`. Strides are in floats.
#[cube(launch_unchecked)]
#[allow(clippy::manual_div_ceil)]
pub fn dft_kernel<F: Float, SI: Storage, SO: Storage>(
    input: &Array<SI::Elem>,
    output: &mut Array<SO::Elem>,
    matrix: &Array<F>,
    extents: DftExtents,
    input_strides: SignalStrides,
    output_strides: SignalStrides,
    #[comptime] cfg: DftConfig,
) {
    let (tp, ts) = comptime![(cfg.tile_p, cfg.tile_s)];
    let (np, ns) = comptime![(cfg.threads_p, cfg.threads_s)];
    let (bp, bs) = comptime![(cfg.block_p(), cfg.block_s())];
    let chunk = comptime![cfg.chunk];
    let threads = comptime![cfg.threads()];
    // Rows of the staged input tile are one float longer than the block, so
    // that staging along the axis (row layouts) spreads over the banks.
    let x_stride = comptime![cfg.block_s() + 1];
    let lane = UNIT_POS as usize;
    // Neighbouring lanes take neighbouring outputs in memory: signals for
    // inner axes, matrix rows (floats along the axis) otherwise.
    let ti = if comptime![cfg.signals_fastest] {
        lane / ns
    } else {
        lane % np
    };
    let tj = if comptime![cfg.signals_fastest] {
        lane % ns
    } else {
        lane / np
    };
    let blocks_p = (extents.p_len + bp - 1) / bp;
    let cube = CUBE_POS;
    let p0 = (cube % blocks_p) * bp;
    let s0 = (cube / blocks_p) * bs;
    if s0 >= extents.signals {
        terminate!();
    }

    let mut smem_a = SharedMemory::<F>::new(comptime![cfg.chunk * cfg.block_p()]);
    let mut smem_x = SharedMemory::<F>::new(comptime![cfg.chunk * (cfg.block_s() + 1)]);
    let mut acc = Array::<F>::new(comptime![cfg.tile_p * cfg.tile_s]);
    #[unroll]
    for t in 0..comptime![cfg.tile_p * cfg.tile_s] {
        acc[t] = F::new(0.0);
    }
    let mut a = Array::<F>::new(comptime![cfg.tile_p]);
    let mut x = Array::<F>::new(comptime![cfg.tile_s]);

    let mut q0 = 0usize;
    while q0 < extents.q_len {
        #[unroll]
        for t in 0..comptime![(cfg.chunk * cfg.block_p()).div_ceil(cfg.threads())] {
            let e = lane + t * threads;
            if comptime![(cfg.chunk * cfg.block_p()).is_multiple_of(cfg.threads())] || e < chunk * bp {
                let (q, p) = (q0 + e / bp, p0 + e % bp);
                let valid = q < extents.q_len && p < extents.p_len;
                smem_a[e] = select(valid, matrix[select(valid, q * extents.p_len + p, 0)], F::new(0.0));
            }
        }
        #[unroll]
        for t in 0..comptime![(cfg.chunk * cfg.block_s()).div_ceil(cfg.threads())] {
            let e = lane + t * threads;
            if comptime![(cfg.chunk * cfg.block_s()).is_multiple_of(cfg.threads())] || e < chunk * bs {
                let q = if comptime![cfg.signals_fastest] {
                    e / bs
                } else {
                    e % chunk
                };
                let s = if comptime![cfg.signals_fastest] {
                    e % bs
                } else {
                    e / chunk
                };
                let (qg, sg) = (q0 + q, s0 + s);
                let valid = qg < extents.q_len && sg < extents.signals;
                let at = address(sg, qg, extents.inner, input_strides, cfg.in_parts);
                smem_x[q * x_stride + s] = select(valid, load_value::<F, SI>(input[select(valid, at, 0)]), F::new(0.0));
            }
        }
        sync_cube();
        accumulate_outer_products::<F>(
            &smem_a,
            ti,
            &smem_x,
            tj,
            &mut a,
            &mut x,
            &mut acc,
            comptime![OuterProducts {
                a: Walk { term: bp, step: np },
                b: Walk {
                    term: x_stride,
                    step: ns
                },
                terms: chunk,
                tm: tp,
                tn: ts,
            }],
        );
        // Every read of this chunk must land before the next one is staged.
        sync_cube();
        q0 += chunk;
    }

    #[unroll]
    for i in 0..tp {
        #[unroll]
        for j in 0..ts {
            let (p, s) = (p0 + ti + i * np, s0 + tj + j * ns);
            if p < extents.p_len && s < extents.signals {
                output[address(s, p, extents.inner, output_strides, cfg.out_parts)] =
                    store_value::<F, SO>(acc[i * ts + j]);
            }
        }
    }
}

/// Largest DFT matrix uploaded, in floats (the direct DFT's and the fused kernel's).
pub(crate) const MAX_MATRIX: usize = 1 << 22;

/// The real matrix of one axis step's direct DFT: between the floats of its
/// stored input window (`terms`) and those of its stored output window (`rows`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DftShape {
    pub rows: usize,
    pub terms: usize,
    pub in_parts: usize,
    pub out_parts: usize,
}

/// `exp(sign·2πi·e/n)` in f64, exact where it is 0 or ±1, so that the
/// imaginary parts of DC and Nyquist bins meet exact zeros.
fn unit_root(e: usize, n: usize, sign: f64) -> (f64, f64) {
    match (e, 2 * e == n, 4 * e == n, 4 * e == 3 * n) {
        (0, ..) => (1.0, 0.0),
        (_, true, ..) => (-1.0, 0.0),
        (_, _, true, _) => (0.0, sign),
        (_, _, _, true) => (0.0, -sign),
        _ => {
            let phase = sign * 2.0 * std::f64::consts::PI * e as f64 / n as f64;
            (phase.cos(), phase.sin())
        }
    }
}

/// Per step kind: floats per input / output entry, input / output sequence
/// lengths, the exponent's sign and whether the input is a half spectrum.
fn kind_layout(step: &AxisStep) -> (usize, usize, usize, usize, f64, bool) {
    let n = step.n;
    match step.kind {
        AxisKind::C2C { inverse } => (2, 2, n, n, if inverse { 1.0 } else { -1.0 }, false),
        AxisKind::R2C => (1, 2, n, n / 2 + 1, -1.0, false),
        AxisKind::C2R => (2, 1, n / 2 + 1, n, 1.0, true),
    }
}

impl DftShape {
    pub(crate) fn of(step: &AxisStep) -> Self {
        let (in_parts, out_parts, seq_in, seq_out, ..) = kind_layout(step);
        DftShape {
            rows: step.store.stored_len(seq_out) * out_parts,
            terms: step.load.stored_len(seq_in) * in_parts,
            in_parts,
            out_parts,
        }
    }

    /// Multiply-adds per signal.
    pub fn work(&self) -> usize {
        self.rows * self.terms
    }

    /// The matrix, `[terms][rows]`, with the step's scale folded in.
    pub(crate) fn matrix(&self, step: &AxisStep) -> Vec<f32> {
        let n = step.n;
        let (in_parts, out_parts, seq_in, seq_out, sign, hermitian) = kind_layout(step);
        let mut matrix = vec![0.0f32; self.terms * self.rows];
        for q in 0..self.terms / in_parts {
            let j = step.load.index(q, seq_in);
            // A half spectrum stands for its conjugate bins too: every bin but
            // DC and Nyquist counts twice.
            let weight = if hermitian && j != 0 && 2 * j != n { 2.0 } else { 1.0 } * step.scale;
            for p in 0..self.rows / out_parts {
                let k = step.store.index(p, seq_out);
                let (re, im) = unit_root(j * k % n, n, sign);
                for b in 0..in_parts {
                    for a in 0..out_parts {
                        // The real embedding of a complex factor: [[re, -im], [im, re]].
                        let value = match (a, b) {
                            (0, 0) | (1, 1) => re,
                            (0, 1) => -im,
                            _ => im,
                        };
                        matrix[(q * in_parts + b) * self.rows + p * out_parts + a] = (weight * value) as f32;
                    }
                }
            }
        }
        matrix
    }
}

#[cfg(test)]
mod tests {
    use super::DftConfig;

    #[test]
    fn blocks_fit_shared_memory_and_cover_the_rows() {
        for rows in 1..=1000 {
            for column in [false, true] {
                let cfg = DftConfig::for_problem(rows, 2, 2, column);
                let staged = cfg.chunk * (cfg.block_p() + cfg.block_s() + 1);
                // Well within the 32 KiB every backend we target gives a cube.
                assert!(staged * 4 <= 24 * 1024, "{rows}: {cfg:?}");
                assert!(cfg.threads() <= 256, "{rows}: {cfg:?}");
                // One block of rows when they fit 16 threads, else blocks of 64.
                assert_eq!(cfg.block_p() >= rows, rows <= 64, "{rows}: {cfg:?}");
            }
        }
    }
}
