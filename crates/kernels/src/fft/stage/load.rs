//! Global loads into the tile, and the host rules that choose how a stage
//! reads its input.

use cubecl::prelude::*;

use super::butterfly::{complex_mul, table_value};
use super::config::{InputForm, Round, StageConfig};
use super::convolution::{input_slot, stages_convolution};
use super::coords::{
    advance_flat, axis_index, axis_offset, fold_dim_index, split_flat, unit_in_tile, window_position, within_fold,
    TileCoords,
};
use super::packed::packed_bin_imag;
use super::split::pass_split;
use crate::pairs::{read_float, read_pair};

/// Where a Hermitian input (bins `0..=len/2` of a length-`len` spectrum) holds
/// axis index `axis`: the bin, and whether the value is its conjugate
/// (`X[len-k] = conj X[k]`).
#[cube]
pub(crate) fn hermitian_bin(axis: usize, #[comptime] len: usize) -> (usize, bool) {
    let mirrored = 2 * axis > len;
    (select(mirrored, len - axis, axis), mirrored)
}

/// The imaginary part at an axis index from its bin's: negated when mirrored,
/// and, like pocketfft, ignored at DC and Nyquist.
#[cube]
pub(crate) fn hermitian_imag<F: Float>(vi: F, bin: usize, mirrored: bool, #[comptime] len: usize) -> F {
    let mut out = select(mirrored, F::new(0.0) - vi, vi);
    if bin == 0 || 2 * bin == len {
        out = F::new(0.0);
    }
    out
}

/// Where element `k` of the tile's signal `s` comes from: the signal's offset,
/// the axis index the load window refers to, and whether the batch (and a
/// fold's length) holds it.
#[cube]
pub(super) fn load_source(at: TileCoords, s: usize, k: usize, #[comptime] cfg: StageConfig) -> (usize, usize, bool) {
    let d = fold_dim_index(at.b, at.c0 + s, cfg.load_fold);
    let axis = axis_index(k, d, cfg.load_fold);
    let inside = at.c0 + s < at.nc && within_fold(axis, comptime![cfg.n], cfg.load_fold);
    (at.in_base + s * at.in_sc, axis, inside)
}

/// Element `k` of the tile's signal `s`, zero outside the load window.
#[cube]
// The cube macro expands a comptime `match`, not an `if let` or match guards.
#[allow(clippy::single_match, clippy::collapsible_match)]
pub(super) fn load_element<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    let in_seq = comptime![cfg.input_seq_len()];
    // A twin slot's first signal; its second lies one signal further along `c`.
    let first = if comptime![cfg.input.is_twin()] { 2 * s } else { s };
    let (sig, axis, inside) = load_source(at, first, k, cfg.clone());
    let twin_inside = inside && at.c0 + first + 1 < at.nc;
    let mut vr = F::new(0.0);
    let mut vi = F::new(0.0);
    match comptime![cfg.input] {
        InputForm::RealTwins => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                vr = read_float::<F, N>(input, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
            if held && twin_inside {
                vi = read_float::<F, N>(input, sig + at.in_sc + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
        }
        InputForm::HermitianTwins => {
            // A + iB from bins A[k] and B[k] of the two signals.
            let len = comptime![cfg.n];
            let (bin, mirrored) = hermitian_bin(axis, len);
            let (held, j) = window_position(bin, cfg.load, in_seq);
            if held && inside {
                let (ar, ai) = read_pair::<F, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = ar;
                vi = hermitian_imag::<F>(ai, bin, mirrored, len);
            }
            if held && twin_inside {
                let (br, bi) = read_pair::<F, N>(
                    input,
                    sig + at.in_sc + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr -= hermitian_imag::<F>(bi, bin, mirrored, len);
                vi += br;
            }
        }
        InputForm::RealPairs => {
            // Complex slot k packs real samples 2k (re) and 2k + 1 (im).
            let (held0, j0) = window_position(2 * axis, cfg.load, in_seq);
            if comptime![cfg.vector_input] {
                // A contiguous axis, an even signal offset and whole pairs in the window.
                if held0 && inside {
                    let (a, b) = read_pair::<F, N>(input, (sig + j0) / 2, true);
                    vr = a;
                    vi = b;
                }
            } else {
                let (held1, j1) = window_position(2 * axis + 1, cfg.load, in_seq);
                if held0 && inside {
                    vr = read_float::<F, N>(input, sig + axis_offset(j0, at.in_axis, cfg.unit_input_axis));
                }
                if held1 && inside {
                    vi = read_float::<F, N>(input, sig + axis_offset(j1, at.in_axis, cfg.unit_input_axis));
                }
            }
        }
        InputForm::Real => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                vr = read_float::<F, N>(input, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis));
            }
        }
        InputForm::Hermitian => {
            let len = comptime![cfg.load_fold.map_or(cfg.n, |f| f.len)];
            let (bin, mirrored) = hermitian_bin(axis, len);
            let (held, j) = window_position(bin, cfg.load, in_seq);
            if held && inside {
                let (a, b) = read_pair::<F, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = a;
                vi = hermitian_imag::<F>(b, bin, mirrored, len);
            }
        }
        _ => {
            let (held, j) = window_position(axis, cfg.load, in_seq);
            if held && inside {
                let (a, b) = read_pair::<F, N>(
                    input,
                    sig + axis_offset(j, at.in_axis, cfg.unit_input_axis),
                    cfg.vector_input,
                );
                vr = a;
                vi = b;
            }
        }
    }
    match comptime![cfg.load_factor] {
        Some(offset) => {
            if inside {
                let (fr, fi) = table_value::<F>(factors, offset + axis);
                let (tr, ti) = complex_mul::<F>(vr, vi, fr, fi);
                vr = tr;
                vi = ti;
            }
        }
        None => {}
    }
    (vr, vi)
}

/// Fewest butterflies per signal with which a first or last pass of a small
/// radix touches global memory directly in a stage of its own; shorter runs go
/// through shared memory in coalesced order.
pub(crate) const MIN_DIRECT_RUN: usize = 8;
/// Largest radix whose pass may go through shared memory with several
/// butterflies per signal: that pass works in place behind a barrier, so each
/// thread holds every output of its butterfly across it.
const MAX_STAGED_RADIX: usize = 32;

/// Whether a first or last pass of radix `r` touches global memory in runs that
/// coalesce: signals side by side, more than one butterfly per signal and, for
/// radices up to [`MAX_STAGED_RADIX`] in a stage that writes global memory, at
/// least [`MIN_DIRECT_RUN`]. Otherwise the tile goes through shared memory in
/// coalesced order, which pays for passes of few butterflies per signal (C2C
/// 17, 23, 85) but not where a few large prime-radix butterflies would stage
/// (141 = 47·3) nor in the plane launch's first stage, whose output stays in
/// shared memory (benches/results/2026-11-25_prime_radices_h100.md).
pub(super) fn direct_runs_coalesce(cfg: &StageConfig, r: usize, signals_fastest: bool) -> bool {
    let butterflies = cfg.n / r;
    let long_runs = butterflies >= MIN_DIRECT_RUN || r > MAX_STAGED_RADIX || cfg.store_shared;
    signals_fastest || (butterflies > 1 && long_runs)
}

/// Whether the first pass reads global memory directly (not when the input
/// must be whole in shared memory first: a convolution, a tile the caller
/// fills, a packed Hermitian input spread over a four-step fold, reads that
/// would not coalesce, a split first pass whose threads each read the whole
/// butterfly).
pub(crate) fn loads_directly(cfg: &StageConfig) -> bool {
    reads_global_unsplit(cfg) && pass_split(cfg, &Round::first(cfg), 0) == 1
}

/// Whether an unsplit first pass would read global memory directly
/// ([`loads_directly`]).
fn reads_global_unsplit(cfg: &StageConfig) -> bool {
    let folds_on_load =
        cfg.input != InputForm::HermitianPacked || (cfg.load_fold.is_none() && cfg.load_factor.is_none());
    !cfg.load_shared
        && folds_on_load
        && cfg.convolution.is_none()
        && cfg
            .radices
            .first()
            .is_some_and(|&r| direct_runs_coalesce(cfg, r, cfg.load_signals_fastest))
}

/// Whether the stage's first pass splits its butterflies over threads
/// ([`pass_split`]) where it would stage its tile in shared memory anyway: a
/// split thread reads every input of its butterfly, which from global memory
/// costs more than the split saves
/// (benches/results/2026-11-25_split_butterflies_h100.md).
pub(crate) fn splits_first_pass(cfg: &StageConfig) -> bool {
    !reads_global_unsplit(cfg) && pass_split(cfg, &Round::first(cfg), 0) > 1
}

/// Whether a resident cube can stage a tile of this stage ahead of time
/// ([`TileFill`]): complex pairs copied as they are (no factor, no folding of
/// bins) from global memory for a first pass that would read them there.
///
/// [`TileFill`]: super::config::TileFill
pub(crate) fn stages_ahead(cfg: &StageConfig) -> bool {
    cfg.input == InputForm::Complex
        && cfg.load_factor.is_none()
        && !cfg.load_shared
        && stages_convolution(cfg)
        && !cfg.radices.is_empty()
        && cfg.vector_input
}

/// Fills the tile's shared memory with its signals' (windowed) input from
/// global memory, walking in the order the loads coalesce in.
#[cube]
pub(crate) fn load_tile<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let load_len = comptime![cfg.load_len()];
    if comptime![tile_loads_ahead(&cfg)] {
        if comptime![walks_units(&cfg, load_len, cfg.load_signals_fastest)] {
            load_rounds_ahead::<F, N>(input, factors, at, smem_re, smem_im, cfg.clone());
        } else {
            load_flat_ahead::<F, N>(input, factors, at, smem_re, smem_im, cfg.clone());
        }
    } else if comptime![walks_units(&cfg, load_len, cfg.load_signals_fastest)] {
        let (s, thread) = unit_in_tile(cfg.clone());
        let threads = comptime![cfg.threads_per_signal];
        #[unroll]
        for round in 0..comptime![load_len.div_ceil(threads)] {
            let (k, held) = unit_walk_element(thread, round, threads, load_len);
            if held {
                load_tile_element::<F, N>(input, factors, at, smem_re, smem_im, s, k, cfg.clone());
            }
        }
    } else {
        let step = comptime![cfg.threads_per_cube()];
        let fastest = comptime![cfg.load_signals_fastest];
        let mut flat = UNIT_POS as usize;
        let (mut s, mut k) = split_flat(flat, load_len, signals, fastest);
        while flat < comptime![load_len * signals] {
            load_tile_element::<F, N>(input, factors, at, smem_re, smem_im, s, k, cfg.clone());
            let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
            s = next_s;
            k = next_k;
            flat += step;
        }
    }
    sync_cube();
}

/// A flat walk's load of the tile (see [`load_tile`]) unrolled over its
/// rounds, issuing every round's global load before it places any value
/// ([`flat_loads_ahead`]).
#[cube]
fn load_flat_ahead<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let load_len = comptime![cfg.load_len()];
    let signals = comptime![cfg.signals_per_cube];
    let total = comptime![load_len * signals];
    let step = comptime![cfg.threads_per_cube()];
    let fastest = comptime![cfg.load_signals_fastest];
    let rounds = comptime![total.div_ceil(step)];
    let first = UNIT_POS as usize;
    let mut re = Array::<F>::new(rounds);
    let mut im = Array::<F>::new(rounds);
    let (mut s, mut k) = split_flat(first, load_len, signals, fastest);
    #[unroll]
    for round in 0..rounds {
        if comptime![(round + 1) * step <= total] || first + round * step < total {
            let (vr, vi) = load_element::<F, N>(input, factors, at, s, k, cfg.clone());
            re[round] = vr;
            im[round] = vi;
        }
        let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
        s = next_s;
        k = next_k;
    }
    let (mut s, mut k) = split_flat(first, load_len, signals, fastest);
    #[unroll]
    for round in 0..rounds {
        if comptime![(round + 1) * step <= total] || first + round * step < total {
            place_element::<F>(factors, smem_re, smem_im, s, k, re[round], im[round], cfg.clone());
        }
        let (next_s, next_k) = advance_flat(s, k, step, load_len, signals, fastest);
        s = next_s;
        k = next_k;
    }
}

/// A unit walk's load of its signal's elements ([`walks_units`]) that issues
/// every round's global load before it places any value in shared memory, so
/// that the loads' latencies overlap ([`loads_ahead`]).
#[cube]
fn load_rounds_ahead<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    #[comptime] cfg: StageConfig,
) {
    let (s, thread) = unit_in_tile(cfg.clone());
    let load_len = comptime![cfg.load_len()];
    let threads = comptime![cfg.threads_per_signal];
    let rounds = comptime![load_len.div_ceil(threads)];
    let mut re = Array::<F>::new(rounds);
    let mut im = Array::<F>::new(rounds);
    #[unroll]
    for round in 0..rounds {
        let (k, held) = unit_walk_element(thread, round, threads, load_len);
        if held {
            let (vr, vi) = load_element::<F, N>(input, factors, at, s, k, cfg.clone());
            re[round] = vr;
            im[round] = vi;
        }
    }
    #[unroll]
    for round in 0..rounds {
        let (k, held) = unit_walk_element(thread, round, threads, load_len);
        if held {
            place_element::<F>(factors, smem_re, smem_im, s, k, re[round], im[round], cfg.clone());
        }
    }
}

/// Element `k` of the tile's signal `s` from global memory to its slot in
/// shared memory (see [`load_tile`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn load_tile_element<F: Float, N: Size>(
    input: &Array<Vector<F, N>>,
    factors: &Array<F>,
    at: TileCoords,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) {
    let (vr, vi) = load_element::<F, N>(input, factors, at, s, k, cfg.clone());
    place_element::<F>(factors, smem_re, smem_im, s, k, vr, vi, cfg);
}

/// Writes loaded element `k` of the tile's signal `s` to its slot in shared
/// memory (see [`load_tile`]).
#[cube]
#[allow(clippy::too_many_arguments)]
fn place_element<F: Float>(
    factors: &Array<F>,
    smem_re: &mut SharedMemory<F>,
    smem_im: &mut SharedMemory<F>,
    s: usize,
    k: usize,
    vr: F,
    vi: F,
    #[comptime] cfg: StageConfig,
) {
    let to = s * comptime![cfg.smem_stride] + input_slot::<F>(factors, k, cfg.clone());
    smem_re[to] = vr;
    smem_im[to] = packed_bin_imag::<F>(vi, k, cfg);
}

/// Element `thread + round · threads` of a unit walk over `len` elements of
/// a signal ([`walks_units`]), and whether the signal has it: always but in
/// a ragged last round, where the check is the only one made at run time.
#[cube]
pub(super) fn unit_walk_element(
    thread: usize,
    #[comptime] round: usize,
    #[comptime] threads: usize,
    #[comptime] len: usize,
) -> (usize, bool) {
    let k = thread + round * threads;
    (k, comptime![(round + 1) * threads <= len] || k < len)
}

/// Most rounds of a unit walk, which unrolls them all.
const MAX_UNIT_WALK_ROUNDS: usize = 32;

/// Whether the tile's load or store walks `len` elements of every signal
/// unit by unit: each unit takes the elements `thread + round ·
/// threads_per_signal` of its own signal ([`unit_in_tile`]), in rounds
/// unrolled at compile time, so that every index but the unit's own is a
/// constant; a store reads every round before it writes any. Otherwise the
/// walk is flat over the tile and carries (signal, element) from round to
/// round ([`advance_flat`]).
///
/// Only a convolution's rows walk units, in runs of at least 8 threads (64
/// bytes) a signal: with Rader's slot tables that cuts the index arithmetic of
/// the permuted load and store. Column tiles walked by units ran slower
/// (benches/results/2026-11-25_unit_walks_h100.md).
pub(crate) fn walks_units(cfg: &StageConfig, len: usize, signals_fastest: bool) -> bool {
    let rows = !signals_fastest && !cfg.load_signals_fastest;
    rows && cfg.convolution.is_some()
        && cfg.threads_per_signal >= 8
        && len.div_ceil(cfg.threads_per_signal) <= MAX_UNIT_WALK_ROUNDS
}

/// Whether a unit walk's load issues all its rounds' global loads before it
/// places any value ([`load_rounds_ahead`]), rather than placing each as it
/// lands, so that the loads' latencies overlap: every input but a Hermitian
/// spectrum's, whose bins ran slower that way and keep placing each value as it
/// lands (benches/results/2026-11-26_loads_ahead_h100.md).
fn loads_ahead(cfg: &StageConfig) -> bool {
    !matches!(
        cfg.input,
        InputForm::Hermitian | InputForm::HermitianPacked | InputForm::HermitianTwins
    )
}

/// Most rounds a flat walk's load holds in registers ([`flat_loads_ahead`]).
const MAX_FLAT_ROUNDS_AHEAD: usize = 16;

/// Whether a flat walk's load (not a unit walk's) unrolls its rounds and issues
/// all their loads before placing any value ([`load_flat_ahead`]): an input
/// [`loads_ahead`] takes, in at most [`MAX_FLAT_ROUNDS_AHEAD`] rounds, but for
/// rows of complex pairs, which ran slower that way and keep the loop
/// (benches/results/2026-11-26_loads_ahead_h100.md).
fn flat_loads_ahead(cfg: &StageConfig) -> bool {
    let rounds = (cfg.load_len() * cfg.signals_per_cube).div_ceil(cfg.threads_per_cube());
    let rows_of_pairs = cfg.input == InputForm::Complex && !cfg.load_signals_fastest;
    loads_ahead(cfg) && !rows_of_pairs && rounds <= MAX_FLAT_ROUNDS_AHEAD
}

/// Whether [`load_tile`] issues every round's load before it places any
/// value: [`loads_ahead`] for a unit walk, [`flat_loads_ahead`] for a flat one.
pub(crate) fn tile_loads_ahead(cfg: &StageConfig) -> bool {
    if walks_units(cfg, cfg.load_len(), cfg.load_signals_fastest) {
        loads_ahead(cfg)
    } else {
        flat_loads_ahead(cfg)
    }
}
