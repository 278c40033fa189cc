//! The fused kernel's body: the forward transforms of a chunk of input
//! channels into the modes buffer, the two contraction schedules
//! ([`Schedule`]), and the inverse transforms of a tile of output channels
//! from it.

use cubecl::prelude::*;
use cubecl::CubeElement;

use super::config::{FusedConfig, Schedule};
use crate::fft::stage::{
    fold_packed_tile, folds_in_shared, hermitian_bin, hermitian_imag, input_slot, load_tile, loads_directly,
    packed_bin_imag, store_tile, stores_directly, tile_output, transform_tile, unit_in_tile, window_index,
    window_position, InputForm, StageTables, TileCoords, TileMemory, TileUnit,
};
use crate::pairs::read_pair;
use crate::precision::{Native, Storage};

#[cube(launch_unchecked)]
// Comptime switches stay outer ifs: a kernel without the feature has none of its code.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
pub(super) fn fused_kernel<F: Float + CubeElement, SI: Storage, SO: Storage, NI: Size, NO: Size, NW: Size>(
    x: &Array<Vector<SI::Elem, NI>>,
    weight: &Array<Vector<F, NW>>,
    y: &mut Array<Vector<SO::Elem, NO>>,
    spectrum: &mut Array<F>,
    forward_tables: &TransformTables<F>,
    inverse_tables: &TransformTables<F>,
    scaling: &ModeScaling<F>,
    shape: FusedShape,
    strides: FusedStrides,
    #[comptime] cfg: FusedConfig,
) {
    let lane = UNIT_POS as usize;
    let fwd = comptime![cfg.forward.clone()];
    let inv = comptime![cfg.inverse.clone()];
    let nt = comptime![cfg.threads()];
    let m = comptime![cfg.modes];
    let (bt_n, ot_n, cc_n, os_n) = comptime![(cfg.batch_tile, cfg.out_tile, cfg.chunk(), cfg.out_signals())];
    let e = CUBE_POS_X as usize;
    let o_tile = CUBE_POS_Y as usize;
    let o0 = o_tile * ot_n;
    let b0 = CUBE_POS_Z as usize * bt_n;

    let mut work = TileMemory::<F> {
        re: SharedMemory::<F>::new(comptime![cfg.work_len()]),
        im: SharedMemory::<F>::new(comptime![cfg.work_len()]),
    };
    let mut modes = SharedMemory::<F>::new(comptime![cfg.modes_len()]);
    let (fwd_signal, fwd_thread) = unit_in_tile(fwd.clone());
    let (inv_signal, inv_thread) = unit_in_tile(inv.clone());
    let fa = ForwardAt {
        batch: shape.batch,
        cin: shape.cin,
        inner: shape.inner,
        e,
        o_tile,
        x: strides.x,
        signal: fwd_signal,
        thread: fwd_thread,
    };
    let ia = InverseAt {
        batch: shape.batch,
        e,
        y: strides.y,
        signal: inv_signal,
        thread: inv_thread,
    };
    // Neither transform has a four-step twiddle.
    let forward = StageTables::<F>::unsplit(&forward_tables.twiddles, &forward_tables.factors);
    let inverse = StageTables::<F>::unsplit(&inverse_tables.twiddles, &inverse_tables.factors);
    let tiles = comptime![cfg.out_tile.div_ceil(cfg.inverse.signals_per_cube)];

    match comptime![cfg.schedule] {
        Schedule::Resident { group, .. } => {
            let rows = comptime![cfg.resident_rows()];
            // 1. Every input channel's modes of the batch tile, into modes[bt, c, k].
            for bt in 0..bt_n {
                let mut ci0 = 0usize;
                while ci0 < shape.cin {
                    forward_chunk::<F, SI, SO, NI, NO>(
                        x,
                        y,
                        spectrum,
                        &forward,
                        &mut work,
                        &mut modes,
                        ForwardChunk {
                            b: b0 + bt,
                            c0: ci0,
                            row0: bt * rows + ci0,
                            kept: shape.cin - ci0,
                        },
                        fa,
                        cfg.clone(),
                    );
                    ci0 += cc_n;
                }
            }
            // 2. modes[bt, o, k] ← Σ_c modes[bt, c, k] · W[c, o, k, e], a round of modes at a time.
            contract_resident::<F, NW>(
                weight,
                scaling,
                &mut modes,
                shape,
                e,
                o0,
                strides.weight,
                group,
                cfg.clone(),
            );
            // 3. The inverse transforms, a tile of output channels at a time.
            for step in 0..bt_n * tiles {
                let (bt, og) = (step / tiles, (step % tiles) * os_n);
                inverse_tile::<F, SI, SO, NI, NO>(
                    x,
                    y,
                    &inverse,
                    &mut work,
                    &modes,
                    InverseChunk {
                        row0: bt * rows + og,
                        b: b0 + bt,
                        c0: o0 + og,
                        last: select(o0 + ot_n < shape.cout, o0 + ot_n, shape.cout),
                    },
                    ia,
                    cfg.clone(),
                );
            }
        }
        Schedule::Streamed => {
            let cp = comptime![cfg.contraction_pairs()];
            let mut acc_re = Array::<F>::new(comptime![cfg.accumulators()]);
            let mut acc_im = Array::<F>::new(comptime![cfg.accumulators()]);
            #[unroll]
            for t in 0..comptime![cfg.accumulators()] {
                acc_re[t] = F::new(0.0);
                acc_im[t] = F::new(0.0);
            }
            let mut ci0 = 0usize;
            while ci0 < shape.cin {
                // 1. The forward transforms of the chunk's pencils, a batch at
                // a time; their retained modes go to modes[bt, cc, k]. Runtime
                // loops around the transforms keep the kernel's code (and its
                // compile time) to one copy of each stage.
                for bt in 0..bt_n {
                    forward_chunk::<F, SI, SO, NI, NO>(
                        x,
                        y,
                        spectrum,
                        &forward,
                        &mut work,
                        &mut modes,
                        ForwardChunk {
                            b: b0 + bt,
                            c0: ci0,
                            row0: bt * cc_n,
                            kept: cc_n,
                        },
                        fa,
                        cfg.clone(),
                    );
                }

                // 2. The contraction: acc[b, o, k] += Σ_c modes[b, c, k] · W[c, o, k, e].
                #[unroll]
                for cc in 0..cc_n {
                    let c = ci0 + cc;
                    #[unroll]
                    for i in 0..cp {
                        let u = lane + i * nt;
                        let (k, o) = (u % m, u / m);
                        let valid = o < ot_n && o0 + o < shape.cout && c < shape.cin;
                        let at = select(
                            valid,
                            c * strides.weight.w_in
                                + (o0 + o) * strides.weight.w_out
                                + (k * shape.inner + e) * strides.weight.w_mode,
                            0,
                        );
                        let (wr, wi) = read_pair::<F, Native<F>, NW>(weight, at, comptime![cfg.vector_weight]);
                        let wr = select(valid, wr, F::new(0.0));
                        let mut wi = select(valid, wi, F::new(0.0));
                        if comptime![cfg.conj_weight] {
                            wi = -wi;
                        }
                        #[unroll]
                        for bt in 0..bt_n {
                            let xs = 2 * ((bt * cc_n + cc) * m + k);
                            let (xr, xi) = (modes[xs], modes[xs + 1]);
                            multiply_add::<F>(&mut acc_re, &mut acc_im, i * bt_n + bt, xr, xi, wr, wi);
                        }
                    }
                }
                // The next chunk's transforms overwrite `modes`.
                sync_cube();
                ci0 += cc_n;
            }

            // 3. The epilogue, per batch and inverse tile of output channels:
            // the accumulated modes (scaled, biased) into `modes`, then the
            // inverse transforms.
            for step in 0..bt_n * tiles {
                let (bt, og) = (step / tiles, (step % tiles) * os_n);
                // The accumulators stay in registers: their indices are comptime.
                #[unroll]
                for i in 0..cp {
                    #[unroll]
                    for bt_r in 0..bt_n {
                        let u = lane + i * nt;
                        let (k, o) = (u % m, u / m);
                        if bt_r == bt && o >= og && o < og + os_n && o < ot_n {
                            let (re, im) = scaled_mode::<F>(
                                acc_re[i * bt_n + bt_r],
                                acc_im[i * bt_n + bt_r],
                                scaling,
                                k * shape.inner + e,
                                o0 + o,
                                shape.cout,
                                cfg.clone(),
                            );
                            let at_mode = 2 * ((o - og) * m + k);
                            modes[at_mode] = re;
                            modes[at_mode + 1] = im;
                        }
                    }
                }
                inverse_tile::<F, SI, SO, NI, NO>(
                    x,
                    y,
                    &inverse,
                    &mut work,
                    &modes,
                    InverseChunk {
                        row0: 0usize,
                        b: b0 + bt,
                        c0: o0 + og,
                        last: select(o0 + ot_n < shape.cout, o0 + ot_n, shape.cout),
                    },
                    ia,
                    cfg.clone(),
                );
            }
        }
    }
}

/// The tables of one of the kernel's transforms: its pass twiddles and its
/// stage's factors.
#[derive(CubeLaunch, CubeType)]
pub(super) struct TransformTables<F: Float> {
    pub twiddles: Array<F>,
    pub factors: Array<F>,
}

/// What the contraction does to each accumulated mode: times the mode's
/// scale, plus `bias_factor · bias[o]` at mode `bias_mode` ([`ModeBias`]).
/// Unscaled and unbiased launches bind the weight in the two arrays.
///
/// [`ModeBias`]: crate::cgemm::ModeBias
#[derive(CubeLaunch, CubeType)]
pub(super) struct ModeScaling<F: Float + CubeElement> {
    pub scale: Array<F>,
    pub bias: Array<F>,
    pub bias_mode: usize,
    pub bias_factor: F,
}

/// The problem's extents: batches, input and output channels, and inner
/// positions (the retained modes of the axes after this one).
#[derive(CubeLaunch, CubeType, Clone, Copy)]
pub(super) struct FusedShape {
    pub batch: usize,
    pub cin: usize,
    pub cout: usize,
    pub inner: usize,
}

/// Where the pencils of `x` and `y` and the weights lie, in entries.
#[derive(CubeLaunch, CubeType, Clone, Copy)]
pub(super) struct FusedStrides {
    pub x: PencilAt,
    pub y: PencilAt,
    pub weight: WeightStrides,
}

/// The weight's strides: along input channels, output channels and modes
/// (the flat mode `k·inner + e`).
#[derive(CubeLaunch, CubeType, Clone, Copy)]
pub(super) struct WeightStrides {
    pub w_in: usize,
    pub w_out: usize,
    pub w_mode: usize,
}

/// Where a tensor's pencils lie, in entries: signal `(b, c, e)` starts at
/// `b·batch + c·channel + e·inner`, its entries `axis` apart.
#[derive(CubeLaunch, CubeType, Clone, Copy)]
pub(super) struct PencilAt {
    batch: usize,
    channel: usize,
    axis: usize,
    inner: usize,
}

/// What a cube's forward chunks share: the problem's batches, input channels
/// and inner positions, the cube's inner position `e` and output tile,
/// where the pencils of x lie, and the unit's signal and thread in the
/// forward tile.
#[derive(CubeType, Clone, Copy)]
struct ForwardAt {
    batch: usize,
    cin: usize,
    inner: usize,
    e: usize,
    o_tile: usize,
    x: PencilAt,
    signal: usize,
    thread: usize,
}

/// The input channels a forward chunk transforms: channels `c0..` of batch
/// `b`, whose retained modes go to rows `row0..row0 + kept` of `modes`.
#[derive(CubeType, Clone, Copy)]
struct ForwardChunk {
    b: usize,
    c0: usize,
    row0: usize,
    kept: usize,
}

/// What a cube's inverse tiles share: the problem's batches, the cube's
/// inner position `e`, where the pencils of y lie, and the unit's signal
/// and thread in the inverse tile.
#[derive(CubeType, Clone, Copy)]
struct InverseAt {
    batch: usize,
    e: usize,
    y: PencilAt,
    signal: usize,
    thread: usize,
}

/// The output channels an inverse tile transforms: channels `c0..last` of
/// batch `b`, their modes in rows `row0..` of `modes`.
#[derive(CubeType, Clone, Copy)]
struct InverseChunk {
    row0: usize,
    b: usize,
    c0: usize,
    last: usize,
}

/// The forward transforms of input channels `c0..` (a stage tile) of batch
/// `b`: their retained modes go to rows `row0..row0 + kept` of `modes` (and
/// to the spectrum, when the launch writes it). A batch past the end
/// transforms the last one again (never stored), keeping every sync uniform.
/// Ends with a barrier: the next transform overwrites the work tile.
#[cube]
#[allow(clippy::too_many_arguments)]
fn forward_chunk<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    x: &Array<Vector<SI::Elem, NI>>,
    y: &mut Array<Vector<SO::Elem, NO>>,
    spectrum: &mut Array<F>,
    tables: &StageTables<F>,
    work: &mut TileMemory<F>,
    modes: &mut SharedMemory<F>,
    chunk: ForwardChunk,
    fa: ForwardAt,
    #[comptime] cfg: FusedConfig,
) {
    let (b, c0, row0, kept) = (chunk.b, chunk.c0, chunk.row0, chunk.kept);
    let fwd = comptime![cfg.forward.clone()];
    let at = TileCoords {
        in_base: select(b < fa.batch, b, fa.batch - 1) * fa.x.batch + c0 * fa.x.channel + fa.e * fa.x.inner,
        out_base: 0,
        in_sc: fa.x.channel,
        out_sc: 0,
        in_axis: fa.x.axis,
        out_axis: 0,
        b: 0,
        c0,
        nc: fa.cin,
    };
    if comptime![!loads_directly(&cfg.forward)] {
        load_tile::<F, SI, NI>(x, &tables.factors, at, &mut work.re, &mut work.im, fwd.clone());
    }
    let unit = TileUnit {
        at,
        signal: fa.signal,
        thread: fa.thread,
    };
    transform_tile::<F, SI, SO, NI, NO>(x, y, tables, work, unit, fwd.clone());
    let m = comptime![cfg.modes];
    let out_seq = comptime![cfg.forward.output_seq_len()];
    let scale = F::new(comptime![f32::from_bits(cfg.forward.scale_bits)]);
    let mut flat = UNIT_POS as usize;
    while flat < comptime![cfg.chunk() * cfg.modes] {
        let (s, j) = (flat / m, flat % m);
        let k = window_index(j, comptime![cfg.forward.store], out_seq);
        let (vr, vi) = tile_output::<F>(&work.re, &work.im, &tables.twiddles, &tables.factors, s, k, fwd.clone());
        let (vr, vi) = (vr * scale, vi * scale);
        if s < kept {
            let at_mode = 2 * ((row0 + s) * m + j);
            modes[at_mode] = vr;
            modes[at_mode + 1] = vi;
        }
        if comptime![cfg.write_spectrum] {
            let c = c0 + s;
            if fa.o_tile == 0 && b < fa.batch && c < fa.cin {
                let at_spectrum = 2 * (((b * fa.cin + c) * m + j) * fa.inner + fa.e);
                spectrum[at_spectrum] = vr;
                spectrum[at_spectrum + 1] = vi;
            }
        }
        flat += comptime![cfg.threads()];
    }
    sync_cube();
}

/// An accumulated mode as the inverse takes it: times the mode's scale, plus
/// the bias of output channel `o` at the biased mode.
#[cube]
#[allow(clippy::collapsible_if)]
fn scaled_mode<F: Float + CubeElement>(
    re: F,
    im: F,
    scaling: &ModeScaling<F>,
    mode: usize,
    o: usize,
    cout: usize,
    #[comptime] cfg: FusedConfig,
) -> (F, F) {
    let s = if comptime![cfg.scaled] {
        scaling.scale[mode % scaling.scale.len()]
    } else {
        F::new(1.0)
    };
    let mut re = re * s;
    if comptime![cfg.biased] {
        if mode == scaling.bias_mode && o < cout {
            re += scaling.bias_factor * scaling.bias[o];
        }
    }
    (re, im * s)
}

/// `acc[t] += x · w` (complex) as four fused multiply-adds.
#[cube]
fn multiply_add<F: Float>(acc_re: &mut Array<F>, acc_im: &mut Array<F>, t: usize, xr: F, xi: F, wr: F, wi: F) {
    acc_re[t] += xr * wr;
    acc_re[t] -= xi * wi;
    acc_im[t] += xr * wi;
    acc_im[t] += xi * wr;
}

/// The resident contraction, in place: each round takes as many modes as the
/// cube's threads cover with `group` output channels each (lanes along the
/// modes, so weights load coalesced), sums over every input channel a block
/// of channels at a time with the next block's weights in flight, and writes
/// its outputs over its modes' inputs once every thread has read them.
#[cube]
#[allow(clippy::too_many_arguments)]
fn contract_resident<F: Float + CubeElement, NW: Size>(
    weight: &Array<Vector<F, NW>>,
    scaling: &ModeScaling<F>,
    modes: &mut SharedMemory<F>,
    shape: FusedShape,
    e: usize,
    o0: usize,
    strides: WeightStrides,
    #[comptime] group: usize,
    #[comptime] cfg: FusedConfig,
) {
    let m = comptime![cfg.modes];
    let (bt_n, ot_n) = comptime![(cfg.batch_tile, cfg.out_tile)];
    let per_round = comptime![cfg.resident_modes_per_round()];
    let depth = comptime![cfg.resident_depth()];
    let blocks = shape.cin / depth;
    let lane = UNIT_POS as usize;
    let (kl, og) = (lane % per_round, lane / per_round);
    let groups = comptime![ot_n.div_ceil(group)];
    let accs = comptime![bt_n * group];
    let in_block = comptime![depth * group];
    let mut k0 = 0usize;
    while k0 < m {
        let k = k0 + kl;
        let live = og < groups && k < m;
        // A thread without a mode or group loads its neighbours' weights
        // (clamped in range) and drops its sums.
        let first = select(og < groups, og, groups - 1) * group;
        let at_mode = (select(k < m, k, m - 1) * shape.inner + e) * strides.w_mode;
        let mut acc_re = Array::<F>::new(accs);
        let mut acc_im = Array::<F>::new(accs);
        #[unroll]
        for t in 0..accs {
            acc_re[t] = F::new(0.0);
            acc_im[t] = F::new(0.0);
        }
        // Two blocks of weights, one multiplied while the other loads.
        let mut a_re = Array::<F>::new(in_block);
        let mut a_im = Array::<F>::new(in_block);
        let mut b_re = Array::<F>::new(in_block);
        let mut b_im = Array::<F>::new(in_block);
        let columns = WeightColumns {
            first: o0 + first,
            last: shape.cout - 1,
            at_mode,
            w_in: strides.w_in,
            w_out: strides.w_out,
        };
        block_weights::<F, NW>(weight, &mut a_re, &mut a_im, 0, columns, group, cfg.clone());
        let mut block = 0usize;
        while block < blocks {
            let (c0, c1) = (block * depth, (block + 1) * depth);
            let next = select(block + 1 < blocks, c1, c0);
            block_weights::<F, NW>(weight, &mut b_re, &mut b_im, next, columns, group, cfg.clone());
            block_products::<F>(&a_re, &a_im, &mut acc_re, &mut acc_im, modes, c0, k, group, cfg.clone());
            if block + 1 < blocks {
                let after = select(block + 2 < blocks, c1 + depth, c1);
                block_weights::<F, NW>(weight, &mut a_re, &mut a_im, after, columns, group, cfg.clone());
                block_products::<F>(&b_re, &b_im, &mut acc_re, &mut acc_im, modes, c1, k, group, cfg.clone());
            }
            block += 2;
        }
        // Every thread has read this round's modes before any overwrites them.
        sync_cube();
        if live {
            #[unroll]
            for bt in 0..bt_n {
                #[unroll]
                for q in 0..group {
                    let o = og * group + q;
                    if o < ot_n {
                        let (re, im) = scaled_mode::<F>(
                            acc_re[bt * group + q],
                            acc_im[bt * group + q],
                            scaling,
                            k * shape.inner + e,
                            o0 + o,
                            shape.cout,
                            cfg.clone(),
                        );
                        let at = 2 * ((bt * comptime![cfg.resident_rows()] + o) * m + k);
                        modes[at] = re;
                        modes[at + 1] = im;
                    }
                }
            }
        }
        sync_cube();
        k0 += per_round;
    }
}

/// Where a resident thread's weights lie: output channels `first..` (past
/// `last` they read the last one's, whose sums are never stored) at the flat
/// offset `at_mode` of its mode, input channels `w_in` apart.
#[derive(CubeType, Clone, Copy)]
struct WeightColumns {
    first: usize,
    last: usize,
    at_mode: usize,
    w_in: usize,
    w_out: usize,
}

/// Weights `W[c0 + d, first + q, ·]` of the `depth` channels of a block and a
/// thread's `group` output channels, at `[d·group + q]`, conjugated when the
/// problem asks.
#[cube]
fn block_weights<F: Float, NW: Size>(
    weight: &Array<Vector<F, NW>>,
    w_re: &mut Array<F>,
    w_im: &mut Array<F>,
    c0: usize,
    columns: WeightColumns,
    #[comptime] group: usize,
    #[comptime] cfg: FusedConfig,
) {
    #[unroll]
    for d in 0..comptime![cfg.resident_depth()] {
        #[unroll]
        for q in 0..group {
            let o = columns.first + q;
            let o = select(o < columns.last, o, columns.last);
            let at = (c0 + d) * columns.w_in + o * columns.w_out + columns.at_mode;
            let (wr, wi) = read_pair::<F, Native<F>, NW>(weight, at, comptime![cfg.vector_weight]);
            w_re[d * group + q] = wr;
            w_im[d * group + q] = if comptime![cfg.conj_weight] { -wi } else { wi };
        }
    }
}

/// Adds a block of channels `c0..c0 + depth` to a thread's sums: every batch
/// of the tile's mode `k` (clamped in range) times the block's weights.
#[cube]
#[allow(clippy::too_many_arguments)]
fn block_products<F: Float>(
    w_re: &Array<F>,
    w_im: &Array<F>,
    acc_re: &mut Array<F>,
    acc_im: &mut Array<F>,
    modes: &SharedMemory<F>,
    c0: usize,
    k: usize,
    #[comptime] group: usize,
    #[comptime] cfg: FusedConfig,
) {
    let m = comptime![cfg.modes];
    let rows = comptime![cfg.resident_rows()];
    let kr = select(k < m, k, m - 1);
    #[unroll]
    for d in 0..comptime![cfg.resident_depth()] {
        #[unroll]
        for bt in 0..comptime![cfg.batch_tile] {
            let xs = 2 * ((bt * rows + c0 + d) * m + kr);
            let (xr, xi) = (modes[xs], modes[xs + 1]);
            #[unroll]
            for q in 0..group {
                multiply_add::<F>(
                    acc_re,
                    acc_im,
                    bt * group + q,
                    xr,
                    xi,
                    w_re[d * group + q],
                    w_im[d * group + q],
                );
            }
        }
    }
}

/// The inverse transforms of output channels `c0..last` of batch `b`, their
/// modes in rows `row0..` of `modes`: through the inverse stage's load
/// window into the work tile, the inverse passes, the output. Starts and
/// ends with a barrier (the modes were just written; the next tile
/// overwrites the work tile).
#[cube]
#[allow(clippy::too_many_arguments)]
fn inverse_tile<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    x: &Array<Vector<SI::Elem, NI>>,
    y: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    work: &mut TileMemory<F>,
    modes: &SharedMemory<F>,
    chunk: InverseChunk,
    ia: InverseAt,
    #[comptime] cfg: FusedConfig,
) {
    let (row0, b, c0, last) = (chunk.row0, chunk.b, chunk.c0, chunk.last);
    let (batch, e, y_at) = (ia.batch, ia.e, ia.y);
    let inv = comptime![cfg.inverse.clone()];
    let m = comptime![cfg.modes];
    let in_seq = comptime![cfg.inverse.input_seq_len()];
    let load_len = comptime![cfg.inverse.load_len()];
    let stride = comptime![cfg.inverse.smem_stride];
    sync_cube();
    let mut flat = UNIT_POS as usize;
    while flat < comptime![cfg.inverse.load_len() * cfg.inverse.signals_per_cube] {
        let (s, k) = (flat / load_len, flat % load_len);
        // A Hermitian input holds bins 0..=n/2: the others are X[n-k] = conj X[k],
        // and DC and Nyquist are real.
        let hermitian = comptime![cfg.inverse.input == InputForm::Hermitian];
        let n = comptime![cfg.inverse.n];
        let (mut bin, mut mirrored) = (k, false);
        if comptime![hermitian] {
            let (hb, mi) = hermitian_bin(k, n);
            bin = hb;
            mirrored = mi;
        }
        let (held, j) = window_position(bin, comptime![cfg.inverse.load], in_seq);
        let mut vr = F::new(0.0);
        let mut vi = F::new(0.0);
        if held {
            vr = modes[2 * ((row0 + s) * m + j)];
            vi = modes[2 * ((row0 + s) * m + j) + 1];
            if comptime![hermitian] {
                vi = hermitian_imag::<F>(vi, bin, mirrored, n);
            }
        }
        let to = s * stride + input_slot::<F>(&tables.factors, k, inv.clone());
        work.re[to] = vr;
        work.im[to] = packed_bin_imag::<F>(vi, k, inv.clone());
        flat += comptime![cfg.threads()];
    }
    sync_cube();
    if comptime![folds_in_shared(&cfg.inverse)] {
        fold_packed_tile::<F>(
            &mut work.re,
            &mut work.im,
            &tables.twiddles,
            ia.signal,
            ia.thread,
            inv.clone(),
        );
    }
    // Only the tile's channels, and none of a batch past the end.
    let at = TileCoords {
        in_base: 0,
        out_base: select(b < batch, b, batch - 1) * y_at.batch + c0 * y_at.channel + e * y_at.inner,
        in_sc: 0,
        out_sc: y_at.channel,
        in_axis: 0,
        out_axis: y_at.axis,
        b: 0,
        c0,
        nc: select(b < batch, last, 0),
    };
    let unit = TileUnit {
        at,
        signal: ia.signal,
        thread: ia.thread,
    };
    transform_tile::<F, SI, SO, NI, NO>(x, y, tables, work, unit, inv.clone());
    if comptime![!stores_directly(&cfg.inverse)] {
        store_tile::<F, SO, NO>(y, tables, work, at, inv.clone());
    }
    sync_cube();
}
