//! The parameter gradients of a 1×1 convolution `Y[b] = W·X[b] + bias` over
//! `[batch, channels, points]` tensors:
//! `GW[o, i] = Σ_{b,s} G[b, o, s] · X[b, i, s]` and `Gbias[o] = Σ_{b,s} G[b, o, s]`.
//!
//! Both operands are contiguous along the summed points, the opposite of the
//! CGEMM's mode-fastest layout, and the sum is long (batch·points, 262 144 terms
//! for 16 samples of 128²) into few outputs (channels²). So a cube of 8 × 8
//! threads owns one block of outputs and one slice of the points of one
//! sample: it stages chunks of the slice's G and X rows in shared memory
//! transposed, point-major, so that each thread reads its contiguous rows of
//! one point as vectors of four, and adds their outer product (up to 8 × 8) to
//! its registers; a second kernel adds the slices' partials.

use cubecl::prelude::*;
use cubecl::server::Handle;

use crate::cgemm::Strides;
use crate::precision::{load_value, with_storage, Precision, Storage};
use crate::split_sum::SplitSumProblem;

/// Threads along each side of the cube's output block (8 × 8 threads).
const SIDE: usize = 8;
const THREADS: usize = SIDE * SIDE;
/// Points staged in shared memory at a time.
const CHUNK: usize = 32;
/// Cubes wanted in flight (eight per multiprocessor of a large GPU).
const WANTED_CUBES: usize = 1056;
/// Fewest points a cube sums, so that partials stay small beside the operands.
const MIN_SLICE: usize = 256;

/// One gradient computation: `G` is `[batch, cout, points]`, `X` is
/// `[batch, cin, points]`, both dense; `GW` is written dense `[cout, cin]` and,
/// with `bias`, `Gbias` dense `[cout]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PointwiseGradProblem {
    pub batch: usize,
    pub cout: usize,
    pub cin: usize,
    pub points: usize,
    pub bias: bool,
}

/// Compile-time tiles and the run-time slicing of the points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PointwiseGradConfig {
    /// Outputs per thread along `cout` and `cin` (1, 4 or 8); the block is
    /// `8·tile_o × 8·tile_i`.
    pub tile_o: usize,
    pub tile_i: usize,
    /// Points per cube (a multiple of the staged chunk).
    pub slice: usize,
}

impl PointwiseGradConfig {
    fn block_o(&self) -> usize {
        SIDE * self.tile_o
    }

    fn block_i(&self) -> usize {
        SIDE * self.tile_i
    }

    /// Floats per shared-memory vector along `cout` and `cin`.
    pub fn vectors(&self) -> (usize, usize) {
        (vector_for(self.tile_o), vector_for(self.tile_i))
    }
}

/// Register tile along a side of `len` outputs: 1, 4 or 8.
fn tile_for(len: usize) -> usize {
    match len {
        0..=8 => 1,
        9..=32 => 4,
        _ => 8,
    }
}

/// A thread's values of one point are read as vectors of up to four floats.
fn vector_for(tile: usize) -> usize {
    tile.min(4)
}

impl PointwiseGradProblem {
    pub fn config(&self) -> PointwiseGradConfig {
        let (tile_o, tile_i) = (tile_for(self.cout), tile_for(self.cin));
        let blocks = self.cout.div_ceil(SIDE * tile_o) * self.cin.div_ceil(SIDE * tile_i);
        let per_sample = WANTED_CUBES.div_ceil(blocks * self.batch.max(1)).max(1);
        let slice = self
            .points
            .div_ceil(per_sample)
            .max(MIN_SLICE)
            .min(self.points.max(1))
            .next_multiple_of(CHUNK);
        PointwiseGradConfig { tile_o, tile_i, slice }
    }

    /// Slices of one sample's points.
    fn slices(&self, cfg: &PointwiseGradConfig) -> usize {
        self.points.div_ceil(cfg.slice).max(1)
    }

    /// Runs on a CubeCL device: `g`, `x` hold `[batch, cout|cin, points]`
    /// values stored in `precision`; writes f32 `grad_weight` (`[cout, cin]`)
    /// and, when the problem has a bias, `grad_bias` (`[cout]`), summed in f32.
    pub fn launch<R: Runtime>(
        &self,
        client: &ComputeClient<R>,
        precision: Precision,
        g: &Handle,
        x: &Handle,
        grad_weight: &Handle,
        grad_bias: Option<&Handle>,
    ) {
        assert_eq!(
            grad_bias.is_some(),
            self.bias,
            "a problem with a bias launches with its gradient, and only it"
        );
        if self.cout * self.cin == 0 {
            return;
        }
        let stored = precision.stored_on(client);
        with_storage!(stored, launch_typed, [], self, client, [g, x, grad_weight], grad_bias)
    }
}

fn launch_typed<R: Runtime, S: Storage>(
    problem: &PointwiseGradProblem,
    client: &ComputeClient<R>,
    [g, x, grad_weight]: [&Handle; 3],
    grad_bias: Option<&Handle>,
) {
    let cfg = problem.config();
    let slices = problem.slices(&cfg);
    let parts = problem.batch.max(1) * slices;
    let weights = problem.cout * problem.cin;
    let partial_w = client.empty(4 * parts * weights);
    // Without a bias the kernel's bias slot is bound to the weight partials, never written.
    let partial_b = problem.bias.then(|| client.empty(4 * parts * problem.cout));
    let count = CubeCount::Static(
        problem.cout.div_ceil(cfg.block_o()) as u32,
        problem.cin.div_ceil(cfg.block_i()) as u32,
        parts as u32,
    );
    let arr = |h: &Handle, len: usize| unsafe { ArrayArg::from_raw_parts(h.clone(), len) };
    let values = problem.batch * problem.points;
    // No samples: no points to sum, so every partial is zero.
    let points = if problem.batch == 0 { 0 } else { problem.points };
    // SAFETY: launched without bounds checks: staged loads are masked to
    // the problem (an index of 0 stands in for an invalid one) and writes
    // to the outputs of the cube's block within `cout × cin`.
    unsafe {
        pointwise_grad_kernel::launch_unchecked::<f32, S, R>(
            client,
            count,
            CubeDim::new_1d(THREADS as u32),
            cfg.vectors().0,
            cfg.vectors().1,
            arr(g, (values * problem.cout).max(1)),
            arr(x, (values * problem.cin).max(1)),
            arr(&partial_w, parts * weights),
            match &partial_b {
                Some(h) => arr(h, parts * problem.cout),
                None => arr(&partial_w, parts * weights),
            },
            problem.cout,
            problem.cin,
            points,
            slices,
            cfg,
            problem.bias,
        );
    }
    let rows_of = |rows: usize, cols: usize| SplitSumProblem {
        splits: parts,
        p: rows,
        q: cols,
        k: 1,
        width: 1,
        strides: Strides {
            row: cols,
            col: 1,
            mode: 0,
        },
    };
    rows_of(problem.cout, problem.cin).launch(client, &partial_w, grad_weight);
    if let (Some(partial), Some(out)) = (&partial_b, grad_bias) {
        rows_of(problem.cout, 1).launch(client, partial, out);
    }
}

impl PointwiseGradProblem {}

/// Loads `CHUNK` points (from `s0`, up to `s_end`) of `block` rows (from
/// `row0`, of `len` valid) of `src` at `base` into registers, as vectors of
/// `width` rows of one point, zeros outside; consecutive threads load
/// consecutive points of a row. [`store_transposed`] puts them in place.
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_transposed<F: Float, S: Storage, N: Size>(
    src: &Array<S::Elem>,
    next: &mut Array<Vector<F, N>>,
    base: usize,
    row0: usize,
    len: usize,
    points: usize,
    s0: usize,
    s_end: usize,
    #[comptime] block: usize,
    #[comptime] width: usize,
) {
    let vectors = comptime![block / width];
    #[unroll]
    for t in 0..comptime![(CHUNK * vectors).div_ceil(THREADS)] {
        let e = UNIT_POS as usize + t * THREADS;
        let (v, k) = (e / CHUNK, e % CHUNK);
        let point_valid = s0 + k < s_end && e < comptime![CHUNK * vectors];
        let mut values = Vector::<F, N>::empty();
        #[unroll]
        for r in 0..width {
            let row = row0 + v * width + r;
            let valid = point_valid && row < len;
            let at = select(valid, base + row * points + s0 + k, 0);
            values[r] = select(valid, load_value::<F, S>(src[at]), F::new(0.0));
        }
        next[t] = values;
    }
}

/// Stores what [`load_transposed`] loaded point-major: point `k`'s rows
/// `row0 + N·v .. + N` are vector `k·pitch + v`.
#[cube]
fn store_transposed<F: Float, N: Size>(
    next: &Array<Vector<F, N>>,
    smem: &mut SharedMemory<Vector<F, N>>,
    #[comptime] block: usize,
    #[comptime] width: usize,
) {
    let vectors = comptime![block / width];
    let pitch = comptime![block / width + 1];
    #[unroll]
    for t in 0..comptime![(CHUNK * vectors).div_ceil(THREADS)] {
        let e = UNIT_POS as usize + t * THREADS;
        if comptime![(CHUNK * vectors).is_multiple_of(THREADS)] || e < comptime![CHUNK * vectors] {
            smem[(e % CHUNK) * pitch + e / CHUNK] = next[t];
        }
    }
}

/// A thread's `tile` values of point `k`: its vectors `first .. first + tile/width`.
#[cube]
fn read_tile<F: Float, N: Size>(
    smem: &SharedMemory<Vector<F, N>>,
    at: usize,
    out: &mut Array<F>,
    #[comptime] tile: usize,
    #[comptime] width: usize,
) {
    #[unroll]
    for v in 0..comptime![tile / width] {
        let values = smem[at + v];
        #[unroll]
        for r in 0..width {
            out[v * width + r] = values[r];
        }
    }
}

/// One cube: a `BO × BI` block of one sample's slice of points, into its
/// partial (`partial_w[part, o, i]`, and `partial_b[part, o]` from the cubes of
/// the first `cin` block).
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn pointwise_grad_kernel<F: Float, S: Storage, NO: Size, NI: Size>(
    g: &Array<S::Elem>,
    x: &Array<S::Elem>,
    partial_w: &mut Array<F>,
    partial_b: &mut Array<F>,
    cout: usize,
    cin: usize,
    points: usize,
    slices: usize,
    #[comptime] cfg: PointwiseGradConfig,
    #[comptime] bias: bool,
) {
    let (to, ti) = comptime![(cfg.tile_o, cfg.tile_i)];
    let (bo, bi) = comptime![(cfg.block_o(), cfg.block_i())];
    let (wo, wi) = comptime![cfg.vectors()];
    let (pitch_o, pitch_i) = comptime![(bo / wo + 1, bi / wi + 1)];
    let lane = UNIT_POS as usize;
    let (tx, ty) = (lane % SIDE, lane / SIDE);
    let part = CUBE_POS_Z as usize;
    let (sample, slice) = (part / slices, part % slices);
    let (o0, i0) = (CUBE_POS_X as usize * bo, CUBE_POS_Y as usize * bi);
    let s_begin = slice * comptime![cfg.slice];
    let s_end = select(
        s_begin + comptime![cfg.slice] < points,
        s_begin + comptime![cfg.slice],
        points,
    );
    let (g_base, x_base) = (sample * cout * points, sample * cin * points);
    let with_bias = comptime![bias] && CUBE_POS_Y == 0;

    let mut smem_g = SharedMemory::<Vector<F, NO>>::new(comptime![CHUNK * (bo / wo + 1)]);
    let mut smem_x = SharedMemory::<Vector<F, NI>>::new(comptime![CHUNK * (bi / wi + 1)]);
    let mut acc = Array::<F>::new(comptime![to * ti]);
    let mut acc_b = Array::<F>::new(to);
    let mut a = Array::<F>::new(to);
    let mut b = Array::<F>::new(ti);
    #[unroll]
    for t in 0..comptime![to * ti] {
        acc[t] = F::new(0.0);
    }
    #[unroll]
    for i in 0..to {
        acc_b[i] = F::new(0.0);
    }

    // Each chunk's operands are loaded into registers while the previous
    // chunk is summed, and stored to shared memory after it.
    let mut g_next = Array::<Vector<F, NO>>::new(comptime![(CHUNK * bo / wo).div_ceil(THREADS)]);
    let mut x_next = Array::<Vector<F, NI>>::new(comptime![(CHUNK * bi / wi).div_ceil(THREADS)]);
    load_transposed::<F, S, NO>(g, &mut g_next, g_base, o0, cout, points, s_begin, s_end, bo, wo);
    load_transposed::<F, S, NI>(x, &mut x_next, x_base, i0, cin, points, s_begin, s_end, bi, wi);
    let mut s0 = s_begin;
    while s0 < s_end {
        store_transposed::<F, NO>(&g_next, &mut smem_g, bo, wo);
        store_transposed::<F, NI>(&x_next, &mut smem_x, bi, wi);
        sync_cube();
        if s0 + CHUNK < s_end {
            let s1 = s0 + CHUNK;
            load_transposed::<F, S, NO>(g, &mut g_next, g_base, o0, cout, points, s1, s_end, bo, wo);
            load_transposed::<F, S, NI>(x, &mut x_next, x_base, i0, cin, points, s1, s_end, bi, wi);
        }
        // A run-time loop over the chunk's points: unrolled, the compiler hoists
        // the loads of many points at once and runs out of registers.
        for k in 0..CHUNK {
            read_tile::<F, NO>(&smem_g, k * pitch_o + ty * comptime![to / wo], &mut a, to, wo);
            read_tile::<F, NI>(&smem_x, k * pitch_i + tx * comptime![ti / wi], &mut b, ti, wi);
            #[unroll]
            for i in 0..to {
                #[unroll]
                for j in 0..ti {
                    acc[i * ti + j] += a[i] * b[j];
                }
            }
            if with_bias {
                #[unroll]
                for i in 0..to {
                    acc_b[i] += a[i];
                }
            }
        }
        sync_cube();
        s0 += CHUNK;
    }

    let weights = cout * cin;
    #[unroll]
    for i in 0..to {
        let o = o0 + ty * to + i;
        #[unroll]
        for j in 0..ti {
            let c = i0 + tx * ti + j;
            if o < cout && c < cin {
                partial_w[part * weights + o * cin + c] = acc[i * ti + j];
            }
        }
        if with_bias && tx == 0 && o < cout {
            partial_b[part * cout + o] = acc_b[i];
        }
    }
}
