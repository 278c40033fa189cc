//! Batched complex GEMM over retained modes: `C[p, q, k] = s[k] · Σ_r op(A[p, r, k]) · op(B[r, q, k])`
//! with independent strides, so one kernel serves the spectral convolution's
//! forward (`Y = X·W` per mode), its input gradient (`G·Wᴴ`), its weight gradient
//! (`Xᴴ·G`, summed over the batch) and TurboFNO's shared weight (a `k` stride of 0).
//! The optional per-mode scale `s` (periodic in `k`) carries the backward's
//! Hermitian bin weights, so they cost no pass of their own.
//!
//! The same kernel runs real operands (a comptime switch): the FNO's 1×1
//! convolutions and the reference path's DFT matrices need f32 products that
//! vendor GEMMs may round to TF32 on tensor cores.
//!
//! Modes are the fastest-varying index of every FNO spectrum, so a cube owns a few
//! consecutive modes (global loads stay sector-sized) and a `BM × BN` block of
//! outputs for each. It walks `r` in chunks: the cube stages the A and B slices of
//! the chunk in shared memory, then every thread multiplies a `TM × TN` register
//! tile of one mode out of them. Thread tiles are strided (row `ti + i·threads_p`)
//! so a warp's shared-memory reads hit consecutive words.
//!
//! Where the device has asynchronous copies (CUDA's `cp.async`) and the
//! operands are 8-byte aligned, the chunks alternate between two buffers: the
//! copies of chunk `i + 1` are in flight while the threads multiply chunk `i`,
//! and they hold no registers, which hides the load latency that bound the
//! contraction (benches/results/2026-11-25_async_cgemm_h100.md). Elsewhere
//! (wgpu) each chunk is staged through registers between two barriers.
//!
//! Reductions over a long `r` with few outputs (the weight gradient's sum over
//! a large batch) split `r` among cubes: each writes a partial product, and a
//! second kernel adds the partials into `C`.

use crate::pairs::{pair_aligned, read_float, read_pair, vector_size, write_pair};
use crate::split_sum::SplitSumProblem;
use cubecl::prelude::barrier::{copy_async_checked, Barrier};
use cubecl::prelude::*;
use cubecl::server::Handle;
use cubecl::CubeElement;

/// A per-column constant added to one mode of the output:
/// `C[p, q, mode] += factor · bias[q]`. A constant added to every point of a
/// signal is one value at frequency 0 (`factor` undoes the inverse transform's
/// scale), so the spectral convolution's bias costs no pass of its own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModeBias {
    pub mode: usize,
    pub factor: f32,
}

/// Strides of an operand in elements (complex or real): (row, column, mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strides {
    pub row: usize,
    pub col: usize,
    pub mode: usize,
}

/// One batched CGEMM: `P × Q` outputs per mode, `R` terms each, `K` modes.
#[derive(Clone, Debug, PartialEq)]
pub struct CgemmProblem {
    pub p: usize,
    pub q: usize,
    pub r: usize,
    pub k: usize,
    /// A indexed by (p, r, mode), B by (r, q, mode), C by (p, q, mode).
    pub a: Strides,
    pub b: Strides,
    pub c: Strides,
    /// `false`: real operands and output, one float per element (no conjugation).
    pub complex: bool,
    pub conj_a: bool,
    pub conj_b: bool,
    /// Output of mode `k` multiplied by `mode_scale[k % mode_scale.len()]`; empty
    /// (or all ones): no scaling, and nothing uploaded.
    pub mode_scale: Vec<f32>,
    /// Added after the scale; launched by [`CgemmProblem::launch_biased`].
    pub bias: Option<ModeBias>,
}

/// Compile-time shape of the cube's block and the thread tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CgemmConfig {
    /// Register tile of one thread: `tile_p × tile_q` outputs of one mode.
    pub tile_p: usize,
    pub tile_q: usize,
    /// Threads along p and q; the block is `tile_p·threads_p × tile_q·threads_q`.
    pub threads_p: usize,
    pub threads_q: usize,
    /// Consecutive modes per cube, one per thread of a tile position.
    pub modes: usize,
    /// Terms of `r` staged in shared memory at a time.
    pub chunk: usize,
    /// Cubes sharing one output block, each summing a slice of `r` (1: none).
    pub splits: usize,
    pub complex: bool,
    pub conj_a: bool,
    pub conj_b: bool,
    pub scaled: bool,
    pub biased: bool,
}

impl CgemmConfig {
    /// Shared memory the cube stages, in bytes.
    pub fn shared_bytes(&self) -> usize {
        4 * self.width() * self.chunk * (self.block_p() + self.block_q()) * self.modes
    }

    fn block_p(&self) -> usize {
        self.tile_p * self.threads_p
    }

    fn block_q(&self) -> usize {
        self.tile_q * self.threads_q
    }

    /// Floats per element.
    fn width(&self) -> usize {
        if self.complex {
            2
        } else {
            1
        }
    }

    pub fn threads(&self) -> usize {
        self.modes * self.threads_p * self.threads_q
    }
}

/// Most threads a cube gets, most complex values it stages per `r` term, and
/// the `r` terms staged at once (at most 16 KiB of shared memory), chosen from
/// a sweep of block shapes (`spectral_bench --cgemm-sweep`;
/// benches/results/2026-11-22_spectral_conv_h100.md).
const MAX_THREADS: usize = 256;
const MAX_STAGED_PER_TERM: usize = 512;
const CHUNK: usize = 4;
/// Cubes wanted in flight: small problems trade register tiles, then modes per
/// cube, for parallelism until the grid has this many (one per multiprocessor
/// of a large GPU).
const MIN_CUBES: usize = 132;
/// Shortest slice of `r` a split cube sums.
const MIN_SPLIT_TERMS: usize = 64;

/// How the cube stages its operands in shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Staging {
    /// Complex operands bound as 8-byte pairs: one shared-memory word pair per element.
    pub pairs: bool,
    /// Asynchronous copies (CUDA's `cp.async`) into two buffers: the cube
    /// multiplies one chunk while the next is in flight, holding no registers
    /// for it. Needs `pairs`.
    pub async_copy: bool,
}

impl Staging {
    /// Shared-memory vectors one element takes: complex values bound as single
    /// floats take two.
    fn vectors_per_element(self, complex: bool) -> usize {
        if complex && !self.pairs {
            2
        } else {
            1
        }
    }

    fn buffers(self) -> usize {
        if self.async_copy {
            2
        } else {
            1
        }
    }

    /// Shared-memory vectors one buffer of an operand with `block` rows
    /// (columns) per mode takes.
    fn buffer_len(self, cfg: &CgemmConfig, block: usize) -> usize {
        self.vectors_per_element(cfg.complex) * cfg.chunk * block * cfg.modes
    }
}

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

/// Element `e` of the chunk staged at vector `buf`, read back from shared memory.
#[cube]
fn staged_value<F: Float, N: Size>(
    smem: &SharedMemory<Vector<F, N>>,
    buf: usize,
    e: usize,
    #[comptime] complex: bool,
    #[comptime] pairs: bool,
) -> (F, F) {
    if comptime![complex && pairs] {
        let v = smem[buf + e];
        (v[0], v[1])
    } else if comptime![complex] {
        (smem[buf + 2 * e][0], smem[buf + 2 * e + 1][0])
    } else {
        (smem[buf + e][0], F::new(0.0))
    }
}

/// Stages the chunk of `r` terms from `r0` of one operand into shared memory
/// at vector `buf`, with zeros outside the problem. Element `e` of the chunk is
/// (r, x, mode) with the mode fastest: consecutive threads read consecutive
/// modes, and write consecutive shared words. Asynchronous copies only start
/// the transfer: the caller commits them to a barrier and waits.
#[cube]
#[allow(clippy::too_many_arguments)]
fn stage_operand<F: Float, N: Size>(
    src: &Array<Vector<F, N>>,
    smem: &mut SharedMemory<Vector<F, N>>,
    buf: usize,
    slice: OperandSlice,
    r0: usize,
    r_len: usize,
    k0: usize,
    k_len: usize,
    #[comptime] block: usize,
    #[comptime] cfg: CgemmConfig,
    #[comptime] staging: Staging,
) {
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
                let mut out = Vector::<F, N>::empty();
                out[0] = select(valid, v[0], F::new(0.0));
                out[1] = select(valid, v[1], F::new(0.0));
                smem[buf + e] = out;
            } else if comptime![cfg.complex] {
                let (re, im) = read_pair::<F, N>(src, at, false);
                smem[buf + 2 * e] = Vector::new(select(valid, re, F::new(0.0)));
                smem[buf + 2 * e + 1] = Vector::new(select(valid, im, F::new(0.0)));
            } else {
                smem[buf + e] = Vector::new(select(valid, read_float::<F, N>(src, at), F::new(0.0)));
            }
        }
    }
}

/// Stages the chunk of `r` terms from `r0` of both operands into their
/// buffer `buffer` (see [`stage_operand`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn stage_chunk<F: Float, N: Size>(
    a: &Array<Vector<F, N>>,
    b: &Array<Vector<F, N>>,
    smem_a: &mut SharedMemory<Vector<F, N>>,
    smem_b: &mut SharedMemory<Vector<F, N>>,
    slice_a: OperandSlice,
    slice_b: OperandSlice,
    buffer: usize,
    r0: usize,
    r_len: usize,
    k0: usize,
    k_len: usize,
    #[comptime] cfg: CgemmConfig,
    #[comptime] staging: Staging,
) {
    let (bp, bq) = comptime![(cfg.block_p(), cfg.block_q())];
    let buf_a = buffer * comptime![staging.buffer_len(&cfg, bp)];
    let buf_b = buffer * comptime![staging.buffer_len(&cfg, bq)];
    stage_operand::<F, N>(a, smem_a, buf_a, slice_a, r0, r_len, k0, k_len, bp, cfg, staging);
    stage_operand::<F, N>(b, smem_b, buf_b, slice_b, r0, r_len, k0, k_len, bq, cfg, staging);
}

/// Multiplies the chunk staged in buffer `buffer` into the thread's register
/// tile, conjugating operands as configured.
#[cube]
#[allow(clippy::too_many_arguments)]
fn multiply_chunk<F: Float, N: Size>(
    smem_a: &SharedMemory<Vector<F, N>>,
    smem_b: &SharedMemory<Vector<F, N>>,
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
            let (re, im) = staged_value::<F, N>(
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
            let (re, im) = staged_value::<F, N>(
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
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
fn cgemm_kernel<F: Float + CubeElement, N: Size>(
    a: &Array<Vector<F, N>>,
    b: &Array<Vector<F, N>>,
    c: &mut Array<Vector<F, N>>,
    scale: &Array<F>,
    bias: &Array<F>,
    bias_mode: usize,
    bias_factor: F,
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
    splits: usize,
    r_per: usize,
    c_split: usize,
    #[comptime] cfg: CgemmConfig,
    #[comptime] staging: Staging,
) {
    let (tp, tq) = comptime![(cfg.tile_p, cfg.tile_q)];
    let (np, nq) = comptime![(cfg.threads_p, cfg.threads_q)];
    let (bp, bq) = comptime![(cfg.block_p(), cfg.block_q())];
    let modes = comptime![cfg.modes];
    let lane = UNIT_POS as usize;
    let m = lane % modes;
    let tj = (lane / modes) % nq;
    let ti = lane / (modes * nq);
    let k0 = CUBE_POS_X as usize * modes;
    let split = CUBE_POS_Y as usize % splits;
    let p0 = (CUBE_POS_Y as usize / splits) * bp;
    let q0 = CUBE_POS_Z as usize * bq;
    // This cube's slice of r; a split writes its partial `c_split` elements on.
    let r_begin = split * r_per;
    let r_end = select(r_begin + r_per < r_len, r_begin + r_per, r_len);

    let mut smem_a = SharedMemory::<Vector<F, N>>::new(comptime![staging.buffer_len(&cfg, bp) * staging.buffers()]);
    let mut smem_b = SharedMemory::<Vector<F, N>>::new(comptime![staging.buffer_len(&cfg, bq) * staging.buffers()]);
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
            stage_chunk::<F, N>(
                a,
                b,
                &mut smem_a,
                &mut smem_b,
                slice_a,
                slice_b,
                0,
                r_begin,
                r_end,
                k0,
                k_len,
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
                stage_chunk::<F, N>(
                    a,
                    b,
                    &mut smem_a,
                    &mut smem_b,
                    slice_a,
                    slice_b,
                    buffer,
                    next,
                    r_end,
                    k0,
                    k_len,
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
            multiply_chunk::<F, N>(
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
            stage_chunk::<F, N>(
                a,
                b,
                &mut smem_a,
                &mut smem_b,
                slice_a,
                slice_b,
                0,
                r0,
                r_end,
                k0,
                k_len,
                cfg,
                staging,
            );
            sync_cube();
            multiply_chunk::<F, N>(&smem_a, &smem_b, 0, &mut acc_re, &mut acc_im, m, ti, tj, cfg, staging);
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
                        if k == bias_mode && split == 0 {
                            re += bias_factor * bias[q];
                        }
                    }
                    if comptime![cfg.complex] {
                        write_pair::<F, N>(c, ct, re, acc_im[i * tq + j] * s, staging.pairs);
                    } else {
                        c[ct] = Vector::new(re);
                    }
                }
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

/// Threads along a side: enough to cover it with `tile`-wide tiles, at most 8.
fn threads_for(len: usize, tile: usize) -> usize {
    len.div_ceil(tile).next_power_of_two().min(8)
}

fn prev_power_of_two(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.max(1).leading_zeros())
}

/// Elements an operand at strides `s` spans (at least one).
pub(crate) fn span(s: Strides, rows: usize, cols: usize, modes: usize) -> usize {
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

    /// The block shape this problem launches with.
    pub fn config(&self) -> CgemmConfig {
        let (tile_p, tile_q) = (tile_for(self.p), tile_for(self.q));
        let threads_p = threads_for(self.p, tile_p).min(4);
        let threads_q = threads_for(self.q, tile_q);
        let staged = tile_p * threads_p + tile_q * threads_q;
        let modes = (MAX_THREADS / (threads_p * threads_q))
            .min(prev_power_of_two(MAX_STAGED_PER_TERM / staged))
            .min(16)
            .min(self.k.max(1).next_power_of_two())
            .max(1);
        let mut cfg = CgemmConfig {
            tile_p,
            tile_q,
            threads_p,
            threads_q,
            modes,
            chunk: CHUNK,
            complex: self.complex,
            conj_a: self.conj_a,
            conj_b: self.conj_b,
            scaled: self.is_scaled(),
            biased: self.bias.is_some(),
            splits: 1,
        };
        // A long reduction into few outputs splits r among cubes (slices of at
        // least MIN_SPLIT_TERMS) until the GPU's threads are busy, rather than
        // shrinking cubes that would each walk all of r.
        let busy = self.cubes(&cfg) * cfg.threads();
        if busy < MIN_CUBES * MAX_THREADS {
            cfg.splits = (MIN_CUBES * MAX_THREADS)
                .div_ceil(busy)
                .min(self.r / MIN_SPLIT_TERMS)
                .max(1);
        }
        while self.cubes(&cfg) < MIN_CUBES {
            if cfg.tile_q > 2 {
                cfg.tile_q /= 2;
            } else if cfg.tile_p > 2 {
                cfg.tile_p /= 2;
            } else if cfg.modes > 2 {
                cfg.modes /= 2;
            } else {
                break;
            }
        }
        cfg
    }

    fn is_scaled(&self) -> bool {
        self.mode_scale.iter().any(|&s| s != 1.0)
    }

    fn cubes(&self, cfg: &CgemmConfig) -> usize {
        self.k.div_ceil(cfg.modes) * self.p.div_ceil(cfg.block_p()) * self.q.div_ceil(cfg.block_q()) * cfg.splits
    }

    /// Runs on a CubeCL device; buffers hold f32 values (complex interleaved).
    pub fn launch<R: Runtime>(&self, client: &ComputeClient<R>, a: &Handle, b: &Handle, c: &Handle) {
        self.launch_with(self.config(), client, a, b, c)
    }

    /// [`launch`](Self::launch) of a problem with a [`ModeBias`], `bias`
    /// holding its `q` values.
    pub fn launch_biased<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        a: &Handle,
        b: &Handle,
        c: &Handle,
        bias: &Handle,
    ) {
        self.dispatch(self.config(), client, (a, b, c), Some(bias))
    }

    /// [`launch`](Self::launch) with a chosen block shape (for tuning); its
    /// conjugations and scaling must be this problem's.
    pub fn launch_with<R: Runtime>(
        &self,
        cfg: CgemmConfig,
        client: &ComputeClient<R>,
        a: &Handle,
        b: &Handle,
        c: &Handle,
    ) {
        self.dispatch(cfg, client, (a, b, c), None)
    }

    fn dispatch<R: Runtime>(
        &self,
        cfg: CgemmConfig,
        client: &ComputeClient<R>,
        (a, b, c): (&Handle, &Handle, &Handle),
        bias: Option<&Handle>,
    ) {
        assert_eq!(
            (cfg.complex, cfg.conj_a, cfg.conj_b, cfg.scaled, cfg.biased),
            (
                self.complex,
                self.conj_a,
                self.conj_b,
                self.is_scaled(),
                self.bias.is_some()
            ),
            "the configuration belongs to another problem"
        );
        assert_eq!(
            bias.is_some(),
            self.bias.is_some(),
            "a biased problem launches with its bias values, and only it"
        );
        assert!(
            self.complex || !(self.conj_a || self.conj_b),
            "real operands have no conjugate"
        );
        let (ea, eb, ec) = self.extents();
        let count = CubeCount::Static(
            self.k.div_ceil(cfg.modes) as u32,
            (self.p.div_ceil(cfg.block_p()) * cfg.splits) as u32,
            self.q.div_ceil(cfg.block_q()) as u32,
        );
        // Split launches write dense partials [split, p, q, k], then add them.
        let outputs = self.p * self.q * self.k;
        let r_per = self.r.div_ceil(cfg.splits).next_multiple_of(cfg.chunk);
        let partial = (cfg.splits > 1).then(|| client.empty(4 * cfg.width() * cfg.splits * outputs));
        let (target, target_len, c_strides, c_split) = match &partial {
            Some(h) => (h, cfg.splits * outputs, (self.q * self.k, self.k, 1), outputs),
            None => (c, ec, (self.c.row, self.c.col, self.c.mode), 0),
        };
        // Unscaled launches bind A in the scale slot (never read): no upload.
        let scale = if cfg.scaled {
            let factors = client.create_from_slice(f32::as_bytes(&self.mode_scale));
            unsafe { ArrayArg::from_raw_parts(factors, self.mode_scale.len()) }
        } else {
            unsafe { ArrayArg::from_raw_parts(a.clone(), 1) }
        };
        // Unbiased launches bind A in the bias slot too.
        let (bias_values, bias) = match (bias, self.bias) {
            (Some(h), Some(mb)) => (unsafe { ArrayArg::from_raw_parts(h.clone(), self.q) }, mb),
            _ => (
                unsafe { ArrayArg::from_raw_parts(a.clone(), 1) },
                ModeBias { mode: 0, factor: 0.0 },
            ),
        };
        let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), cfg.width() * len) };
        // Complex operands travel as 8-byte pairs wherever every buffer starts on a pair.
        let pairs = cfg.complex && [a, b, target].into_iter().all(pair_aligned);
        let props = client.properties();
        let staging = Staging {
            pairs,
            async_copy: pairs
                && props.features.copy_async
                && 2 * cfg.shared_bytes() <= props.hardware.max_shared_memory_size,
        };
        // SAFETY: launched without bounds checks: every index the kernel forms
        // stays inside the arrays sized here (see `DeviceFft::launch`).
        unsafe {
            cgemm_kernel::launch_unchecked::<f32, R>(
                client,
                count,
                CubeDim::new_1d(cfg.threads() as u32),
                vector_size(pairs),
                arr(a, ea),
                arr(b, eb),
                arr(target, target_len),
                scale,
                bias_values,
                bias.mode,
                bias.factor,
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
                c_strides.0,
                c_strides.1,
                c_strides.2,
                cfg.splits,
                r_per,
                c_split,
                cfg,
                staging,
            );
        }
        if let Some(partial) = partial {
            let sum = SplitSumProblem {
                splits: cfg.splits,
                p: self.p,
                q: self.q,
                k: self.k,
                width: cfg.width(),
                strides: self.c,
            };
            sum.launch(client, &partial, c);
        }
    }

    /// The CPU oracle (f64, complex interleaved), for tests; `bias` holds the
    /// [`ModeBias`]'s `q` values.
    pub fn run_cpu(&self, a: &[f64], b: &[f64], bias: Option<&[f64]>) -> Vec<f64> {
        let (_, _, ec) = self.extents();
        let width = if self.complex { 2 } else { 1 };
        // Real values read as complex ones with a zero imaginary part.
        let value = |v: &[f64], i: usize, sign: f64| match self.complex {
            true => (v[2 * i], sign * v[2 * i + 1]),
            false => (v[i], 0.0),
        };
        let mut c = vec![0.0; width * ec];
        let sa = if self.conj_a { -1.0 } else { 1.0 };
        let sb = if self.conj_b { -1.0 } else { 1.0 };
        for k in 0..self.k {
            for p in 0..self.p {
                for q in 0..self.q {
                    let (mut re, mut im) = (0.0, 0.0);
                    for r in 0..self.r {
                        let (xr, xi) = value(a, p * self.a.row + r * self.a.col + k * self.a.mode, sa);
                        let (yr, yi) = value(b, r * self.b.row + q * self.b.col + k * self.b.mode, sb);
                        re += xr * yr - xi * yi;
                        im += xr * yi + xi * yr;
                    }
                    let s = match self.mode_scale.len() {
                        0 => 1.0,
                        n => self.mode_scale[k % n] as f64,
                    };
                    let ic = width * (p * self.c.row + q * self.c.col + k * self.c.mode);
                    c[ic] = re * s;
                    if let (Some(mb), Some(values)) = (self.bias, bias) {
                        if k == mb.mode {
                            c[ic] += mb.factor as f64 * values[q];
                        }
                    }
                    if self.complex {
                        c[ic + 1] = im * s;
                    }
                }
            }
        }
        c
    }
}

/// The three contractions of a spectral convolution over spectra laid out
/// `[batch, channels, modes]` and weights `[Cin, Cout, modes]` (or `[Cin, Cout]`
/// when shared) with the weight's strides given (frameworks may pad its rows).
pub mod spectral {
    use super::{CgemmProblem, Strides};

    /// Strides of a densely stored weight: `row` walks `Cin`, `col` walks `Cout`,
    /// and `mode` is 0 for a weight shared by all modes.
    pub fn dense_weight(cout: usize, modes: usize, shared: bool) -> Strides {
        let per_mode = if shared { 1 } else { modes };
        Strides {
            row: cout * per_mode,
            col: per_mode,
            mode: if shared { 0 } else { 1 },
        }
    }

    fn dense(channels: usize, modes: usize) -> Strides {
        Strides {
            row: channels * modes,
            col: modes,
            mode: 1,
        }
    }

    /// `Y[b, o, k] = Σ_i X[b, i, k] · W[i, o, k]`.
    pub fn forward(batch: usize, cin: usize, cout: usize, modes: usize, weight: Strides) -> CgemmProblem {
        CgemmProblem {
            p: batch,
            q: cout,
            r: cin,
            k: modes,
            a: dense(cin, modes),
            b: weight,
            c: dense(cout, modes),
            complex: true,
            conj_a: false,
            conj_b: false,
            mode_scale: Vec::new(),
            bias: None,
        }
    }

    /// `GX[b, i, k] = Σ_o G[b, o, k] · conj(W[i, o, k])`.
    pub fn grad_input(batch: usize, cin: usize, cout: usize, modes: usize, weight: Strides) -> CgemmProblem {
        CgemmProblem {
            p: batch,
            q: cin,
            r: cout,
            k: modes,
            a: dense(cout, modes),
            // Wᵀ: B's rows walk Cout, its columns Cin.
            b: Strides {
                row: weight.col,
                col: weight.row,
                mode: weight.mode,
            },
            c: dense(cin, modes),
            complex: true,
            conj_a: false,
            conj_b: true,
            mode_scale: Vec::new(),
            bias: None,
        }
    }

    /// `GW[i, o, k] = Σ_b conj(X[b, i, k]) · G[b, o, k]` (per mode; a shared
    /// weight's gradient is its sum over `k`), written densely.
    pub fn grad_weight(batch: usize, cin: usize, cout: usize, modes: usize) -> CgemmProblem {
        let x = dense(cin, modes);
        CgemmProblem {
            p: cin,
            q: cout,
            r: batch,
            k: modes,
            // Xᴴ: A's rows walk Cin, its columns the batch.
            a: Strides {
                row: x.col,
                col: x.row,
                mode: 1,
            },
            b: dense(cout, modes),
            c: dense(cout, modes),
            complex: true,
            conj_a: true,
            conj_b: false,
            mode_scale: Vec::new(),
            bias: None,
        }
    }
}

/// Real matrix products `C[b] = A[b]·B[b]` over a stack of matrices, in f32.
pub mod real {
    use super::{CgemmProblem, Strides};

    /// Strides of a stack of matrices in floats; a `batch` stride of 0 repeats
    /// one matrix for every product.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct MatrixStrides {
        pub batch: usize,
        pub row: usize,
        pub col: usize,
    }

    /// `[batch, m, k]·[batch, k, n]` into a dense `[batch, m, n]`. A left operand
    /// repeated over the batch (a 1×1 convolution's weight against `[batch,
    /// channels, points]`) makes the output's columns the kernel's mode index,
    /// the fastest one, so its loads and stores stay coalesced; otherwise the
    /// batch is.
    pub fn matmul(batch: usize, m: usize, k: usize, n: usize, lhs: MatrixStrides, rhs: MatrixStrides) -> CgemmProblem {
        let columns_as_modes = lhs.batch == 0 && batch > 1;
        let (q, modes, b, c) = if columns_as_modes {
            (
                batch,
                n,
                Strides {
                    row: rhs.row,
                    col: rhs.batch,
                    mode: rhs.col,
                },
                Strides {
                    row: n,
                    col: m * n,
                    mode: 1,
                },
            )
        } else {
            (
                n,
                batch,
                Strides {
                    row: rhs.row,
                    col: rhs.col,
                    mode: rhs.batch,
                },
                Strides {
                    row: n,
                    col: 1,
                    mode: m * n,
                },
            )
        };
        CgemmProblem {
            p: m,
            q,
            r: k,
            k: modes,
            a: Strides {
                row: lhs.row,
                col: lhs.col,
                mode: lhs.batch,
            },
            b,
            c,
            complex: false,
            conj_a: false,
            conj_b: false,
            mode_scale: Vec::new(),
            bias: None,
        }
    }
}
