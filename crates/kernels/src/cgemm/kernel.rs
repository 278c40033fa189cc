//! The kernel: chunks of both operands staged in shared memory, register tiles
//! multiplied out of them, and the tiles scaled, biased and written. Each
//! operand has its own [`Storage`]: shared memory holds the stored values
//! (so asynchronous copies move them as they are), products and sums run in `F`.

use super::config::{CgemmConfig, Staging};
use crate::pairs::{write_float, write_pair};
use crate::precision::{load_value, Storage};
use cubecl::prelude::barrier::{copy_async_checked, Barrier};
use cubecl::prelude::*;
use cubecl::CubeElement;

/// A cube's slice of one operand: rows (columns) from `x0` of `x_len`, and
/// the strides along them, along `r` and along the modes.
#[derive(CubeType, Clone, Copy)]
struct OperandSlice {
    x0: usize,
    x_len: usize,
    x_stride: usize,
    r_stride: usize,
    k_stride: usize,
}

/// The terms `r0..r_end` and the modes from `k0` below `k_len` a chunk stages.
#[derive(CubeType, Clone, Copy)]
struct ChunkSpan {
    r0: usize,
    r_end: usize,
    k0: usize,
    k_len: usize,
}

/// Values that meet one mode, scaled by `factor`: a bias added at that mode
/// (or, in the chain, the input's sums taken there).
#[derive(CubeLaunch, CubeType)]
pub(super) struct AtMode<F: Float + CubeElement> {
    pub values: Array<F>,
    pub mode: usize,
    pub factor: F,
}

/// The problem's sizes: `C` is `p × q` per mode, summed over `r`, at `k` modes.
#[derive(CubeLaunch, CubeType)]
pub(super) struct CgemmDims {
    pub p: usize,
    pub q: usize,
    pub r: usize,
    pub k: usize,
}

/// One operand's strides, in elements, along its rows, its columns and the modes.
#[derive(CubeLaunch, CubeType)]
pub(super) struct OperandStrides {
    pub row: usize,
    pub col: usize,
    pub mode: usize,
}

/// The strides of A (`p, r, k`), B (`r, q, k`) and C (`p, q, k`).
#[derive(CubeLaunch, CubeType)]
pub(super) struct CgemmStrides {
    pub a: OperandStrides,
    pub b: OperandStrides,
    pub c: OperandStrides,
}

/// How `r` is split among cubes: `splits` slices of `r_per` terms, a split's
/// partial products written `c_split` elements after the last's.
#[derive(CubeLaunch, CubeType)]
pub(super) struct RSplit {
    pub splits: usize,
    pub r_per: usize,
    pub c_split: usize,
}

/// Element `e` of the chunk staged at vector `buf`, read back from shared
/// memory (which holds the operand's stored values) as `F`.
#[cube]
fn staged_value<F: Float, S: Storage, N: Size>(
    smem: &SharedMemory<Vector<S::Elem, N>>,
    buf: usize,
    e: usize,
    #[comptime] complex: bool,
    #[comptime] pairs: bool,
) -> (F, F) {
    if comptime![complex && pairs] {
        let v = smem[buf + e];
        (load_value::<F, S>(v[0]), load_value::<F, S>(v[1]))
    } else if comptime![complex] {
        (
            load_value::<F, S>(smem[buf + 2 * e][0]),
            load_value::<F, S>(smem[buf + 2 * e + 1][0]),
        )
    } else {
        (load_value::<F, S>(smem[buf + e][0]), F::new(0.0))
    }
}

/// Stages the chunk of `r` terms from `r0` of one operand into shared memory
/// at vector `buf`, in the operand's stored type, with zeros outside the problem. Element `e` of the chunk is
/// (r, x, mode) with the mode fastest: consecutive threads read consecutive
/// modes, and write consecutive shared words. Asynchronous copies only start
/// the transfer: the caller commits them to a barrier and waits.
#[cube]
fn stage_operand<S: Storage, N: Size>(
    src: &Array<Vector<S::Elem, N>>,
    smem: &mut SharedMemory<Vector<S::Elem, N>>,
    buf: usize,
    slice: OperandSlice,
    span: ChunkSpan,
    #[comptime] block: usize,
    #[comptime] cfg: CgemmConfig,
    #[comptime] staging: Staging,
) {
    let (r0, r_len, k0, k_len) = (span.r0, span.r_end, span.k0, span.k_len);
    let total = comptime![cfg.chunk * block * cfg.modes];
    let threads = comptime![cfg.threads()];
    #[unroll]
    for t in 0..comptime![total.div_ceil(threads)] {
        let e = UNIT_POS as usize + t * threads;
        if comptime![total % threads == 0] || e < total {
            let m = e % comptime![cfg.modes];
            let x = (e / comptime![cfg.modes]) % block;
            let r = e / comptime![cfg.modes * block];
            let (xg, rg, kg) = (slice.x0 + x, r0 + r, k0 + m);
            let valid = xg < slice.x_len && rg < r_len && kg < k_len;
            let at = select(
                valid,
                xg * slice.x_stride + rg * slice.r_stride + kg * slice.k_stride,
                0,
            );
            if comptime![staging.async_copy] {
                // A source of no elements zero-fills the destination.
                let len = select(valid, 1usize, 0usize);
                copy_async_checked(
                    &src.slice(at, at + len),
                    &mut smem.slice_mut(buf + e, buf + e + 1),
                    2u32,
                );
            } else if comptime![cfg.complex && staging.pairs] {
                let v = src[at];
                let zero = S::Elem::new(0.0);
                let mut out = Vector::<S::Elem, N>::empty();
                out[0] = select(valid, v[0], zero);
                out[1] = select(valid, v[1], zero);
                smem[buf + e] = out;
            } else if comptime![cfg.complex] {
                let zero = S::Elem::new(0.0);
                smem[buf + 2 * e] = Vector::new(select(valid, src[2 * at][0], zero));
                smem[buf + 2 * e + 1] = Vector::new(select(valid, src[2 * at + 1][0], zero));
            } else {
                smem[buf + e] = Vector::new(select(valid, src[at][0], S::Elem::new(0.0)));
            }
        }
    }
}

/// Stages the chunk of `r` terms from `r0` of both operands into their
/// buffer `buffer` (see [`stage_operand`]).
#[cube]
fn stage_chunk<SA: Storage, SB: Storage, N: Size>(
    a: &Array<Vector<SA::Elem, N>>,
    b: &Array<Vector<SB::Elem, N>>,
    smem_a: &mut SharedMemory<Vector<SA::Elem, N>>,
    smem_b: &mut SharedMemory<Vector<SB::Elem, N>>,
    slice_a: OperandSlice,
    slice_b: OperandSlice,
    buffer: usize,
    span: ChunkSpan,
    #[comptime] cfg: CgemmConfig,
    #[comptime] staging: Staging,
) {
    let (bp, bq) = comptime![(cfg.block_p(), cfg.block_q())];
    let buf_a = buffer * comptime![staging.buffer_len(&cfg, bp)];
    let buf_b = buffer * comptime![staging.buffer_len(&cfg, bq)];
    stage_operand::<SA, N>(a, smem_a, buf_a, slice_a, span, bp, cfg, staging);
    stage_operand::<SB, N>(b, smem_b, buf_b, slice_b, span, bq, cfg, staging);
}

/// Multiplies the chunk staged in buffer `buffer` into the thread's register
/// tile, conjugating operands as configured.
#[cube]
#[allow(clippy::too_many_arguments)]
fn multiply_chunk<F: Float, SA: Storage, SB: Storage, N: Size>(
    smem_a: &SharedMemory<Vector<SA::Elem, N>>,
    smem_b: &SharedMemory<Vector<SB::Elem, N>>,
    buffer: usize,
    acc_re: &mut Array<F>,
    acc_im: &mut Array<F>,
    m: usize,
    ti: usize,
    tj: usize,
    #[comptime] cfg: CgemmConfig,
    #[comptime] staging: Staging,
) {
    let (tp, tq) = comptime![(cfg.tile_p, cfg.tile_q)];
    let (np, nq) = comptime![(cfg.threads_p, cfg.threads_q)];
    let (bp, bq) = comptime![(cfg.block_p(), cfg.block_q())];
    let modes = comptime![cfg.modes];
    let buf_a = buffer * comptime![staging.buffer_len(&cfg, bp)];
    let buf_b = buffer * comptime![staging.buffer_len(&cfg, bq)];
    let sign_a = F::new(comptime![if cfg.conj_a { -1.0f32 } else { 1.0 }]);
    let sign_b = F::new(comptime![if cfg.conj_b { -1.0f32 } else { 1.0 }]);
    let mut ar = Array::<F>::new(tp);
    let mut ai = Array::<F>::new(tp);
    let mut br = Array::<F>::new(tq);
    let mut bi = Array::<F>::new(tq);
    #[unroll]
    for rr in 0..comptime![cfg.chunk] {
        #[unroll]
        for i in 0..tp {
            let (re, im) = staged_value::<F, SA, N>(
                smem_a,
                buf_a,
                (rr * bp + ti + i * np) * modes + m,
                cfg.complex,
                staging.pairs,
            );
            ar[i] = re;
            ai[i] = im * sign_a;
        }
        #[unroll]
        for j in 0..tq {
            let (re, im) = staged_value::<F, SB, N>(
                smem_b,
                buf_b,
                (rr * bq + tj + j * nq) * modes + m,
                cfg.complex,
                staging.pairs,
            );
            br[j] = re;
            bi[j] = im * sign_b;
        }
        #[unroll]
        for i in 0..tp {
            #[unroll]
            for j in 0..tq {
                let t = i * tq + j;
                if comptime![cfg.complex] {
                    // One product per statement: each contracts to one FMA.
                    acc_re[t] += ar[i] * br[j];
                    acc_re[t] -= ai[i] * bi[j];
                    acc_im[t] += ar[i] * bi[j];
                    acc_im[t] += ai[i] * br[j];
                } else {
                    acc_re[t] += ar[i] * br[j];
                }
            }
        }
    }
}

#[cube(launch_unchecked)]
// Comptime switches stay outer ifs: a kernel without the feature has none of its code.
#[allow(clippy::collapsible_if)]
pub(super) fn cgemm_kernel<F: Float + CubeElement, SA: Storage, SB: Storage, SC: Storage, N: Size>(
    a: &Array<Vector<SA::Elem, N>>,
    b: &Array<Vector<SB::Elem, N>>,
    c: &mut Array<Vector<SC::Elem, N>>,
    scale: &Array<F>,
    bias: &AtMode<F>,
    dims: &CgemmDims,
    strides: &CgemmStrides,
    r_split: &RSplit,
    #[comptime] cfg: CgemmConfig,
    #[comptime] staging: Staging,
) {
    let (p_len, q_len, r_len, k_len) = (dims.p, dims.q, dims.r, dims.k);
    let (a_p, a_r, a_k) = (strides.a.row, strides.a.col, strides.a.mode);
    let (b_r, b_q, b_k) = (strides.b.row, strides.b.col, strides.b.mode);
    let (c_p, c_q, c_k) = (strides.c.row, strides.c.col, strides.c.mode);
    let (splits, r_per, c_split) = (r_split.splits, r_split.r_per, r_split.c_split);
    let (tp, tq) = comptime![(cfg.tile_p, cfg.tile_q)];
    let (np, nq) = comptime![(cfg.threads_p, cfg.threads_q)];
    let (bp, bq) = comptime![(cfg.block_p(), cfg.block_q())];
    let modes = comptime![cfg.modes];
    let lane = UNIT_POS as usize;
    let m = lane % modes;
    let tj = (lane / modes) % nq;
    let ti = lane / (modes * nq);
    // Rows of blocks beyond a grid's y limit are folded into x (see `launch_with`).
    let k_blocks = k_len.div_ceil(modes);
    let y = CUBE_POS_Y as usize + (CUBE_POS_X as usize / k_blocks) * CUBE_COUNT_Y as usize;
    if y >= p_len.div_ceil(bp) * splits {
        terminate!();
    }
    let k0 = (CUBE_POS_X as usize % k_blocks) * modes;
    let split = y % splits;
    let p0 = (y / splits) * bp;
    let q0 = CUBE_POS_Z as usize * bq;
    // This cube's slice of r; a split writes its partial `c_split` elements on.
    let r_begin = split * r_per;
    let r_end = select(r_begin + r_per < r_len, r_begin + r_per, r_len);

    let mut smem_a =
        SharedMemory::<Vector<SA::Elem, N>>::new(comptime![staging.buffer_len(&cfg, bp) * staging.buffers()]);
    let mut smem_b =
        SharedMemory::<Vector<SB::Elem, N>>::new(comptime![staging.buffer_len(&cfg, bq) * staging.buffers()]);
    let mut acc_re = Array::<F>::new(comptime![cfg.tile_p * cfg.tile_q]);
    let mut acc_im = Array::<F>::new(comptime![cfg.tile_p * cfg.tile_q]);
    #[unroll]
    for t in 0..comptime![cfg.tile_p * cfg.tile_q] {
        acc_re[t] = F::new(0.0);
        acc_im[t] = F::new(0.0);
    }
    let slice_a = OperandSlice {
        x0: p0,
        x_len: p_len,
        x_stride: a_p,
        r_stride: a_r,
        k_stride: a_k,
    };
    let slice_b = OperandSlice {
        x0: q0,
        x_len: q_len,
        x_stride: b_q,
        r_stride: b_r,
        k_stride: b_k,
    };

    if comptime![staging.async_copy] {
        // Chunk i lands in buffer i % 2 and signals barrier i % 2; the copies of
        // chunk i + 1 are issued before the cube waits for chunk i.
        let landed_0 = Barrier::shared(CUBE_DIM, UNIT_POS == 0);
        let landed_1 = Barrier::shared(CUBE_DIM, UNIT_POS == 0);
        // A split cube whose slice of r is empty leaves no copy in flight.
        if r_begin < r_end {
            stage_chunk::<SA, SB, N>(
                a,
                b,
                &mut smem_a,
                &mut smem_b,
                slice_a,
                slice_b,
                0,
                ChunkSpan {
                    r0: r_begin,
                    r_end,
                    k0,
                    k_len,
                },
                cfg,
                staging,
            );
            landed_0.commit_copy_async();
        }
        let mut r0 = r_begin;
        let mut odd = false;
        while r0 < r_end {
            let next = r0 + comptime![cfg.chunk];
            if next < r_end {
                let buffer = select(odd, 0usize, 1usize);
                stage_chunk::<SA, SB, N>(
                    a,
                    b,
                    &mut smem_a,
                    &mut smem_b,
                    slice_a,
                    slice_b,
                    buffer,
                    ChunkSpan {
                        r0: next,
                        r_end,
                        k0,
                        k_len,
                    },
                    cfg,
                    staging,
                );
                if odd {
                    landed_0.commit_copy_async();
                } else {
                    landed_1.commit_copy_async();
                }
            }
            if odd {
                landed_1.arrive_and_wait();
            } else {
                landed_0.arrive_and_wait();
            }
            let buffer = select(odd, 1usize, 0usize);
            multiply_chunk::<F, SA, SB, N>(
                &smem_a,
                &smem_b,
                buffer,
                &mut acc_re,
                &mut acc_im,
                m,
                ti,
                tj,
                cfg,
                staging,
            );
            // Every read of this buffer must land before the copies of the chunk after next.
            sync_cube();
            r0 = next;
            odd = !odd;
        }
    } else {
        let mut r0 = r_begin;
        while r0 < r_end {
            stage_chunk::<SA, SB, N>(
                a,
                b,
                &mut smem_a,
                &mut smem_b,
                slice_a,
                slice_b,
                0,
                ChunkSpan { r0, r_end, k0, k_len },
                cfg,
                staging,
            );
            sync_cube();
            multiply_chunk::<F, SA, SB, N>(&smem_a, &smem_b, 0, &mut acc_re, &mut acc_im, m, ti, tj, cfg, staging);
            // Every read of this chunk must land before the next chunk is staged.
            sync_cube();
            r0 += comptime![cfg.chunk];
        }
    }

    let k = k0 + m;
    if k < k_len {
        let s = if comptime![cfg.scaled] {
            scale[k % scale.len()]
        } else {
            F::new(1.0)
        };
        #[unroll]
        for i in 0..tp {
            #[unroll]
            for j in 0..tq {
                let (p, q) = (p0 + ti + i * np, q0 + tj + j * nq);
                if p < p_len && q < q_len {
                    let ct = p * c_p + q * c_q + k * c_k + split * c_split;
                    let mut re = acc_re[i * tq + j] * s;
                    if comptime![cfg.biased] {
                        if k == bias.mode && split == 0 {
                            re += bias.factor * bias.values[q];
                        }
                    }
                    if comptime![cfg.complex] {
                        write_pair::<F, SC, N>(c, ct, re, acc_im[i * tq + j] * s, staging.pairs);
                    } else {
                        write_float::<F, SC, N>(c, ct, re);
                    }
                }
            }
        }
    }
}
