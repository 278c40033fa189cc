//! Stores of the tile's outputs to global memory, and the host rule that
//! chooses whether the last pass writes them directly.

use cubecl::prelude::*;

use crate::precision::Storage;

use super::args::{StageTables, TileMemory};
use super::butterfly::{complex_mul, table_twiddle, table_value};
use super::config::{OutputForm, StageConfig};
use super::convolution::rader_slot;
use super::coords::{advance_flat, slot, split_flat, unit_in_tile, window_index, TileCoords};
use super::element::{store_element, store_slot_value, unit_walk_element};
use super::packed::untangle_bin;
use super::rules::walks_units;

/// Writes the tile's outputs from shared memory, in the order the output coalesces in.
#[cube]
pub(crate) fn store_tile<F: Float, S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    tables: &StageTables<F>,
    tile_memory: &TileMemory<F>,
    at: TileCoords,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let per_signal = comptime![if cfg.store_walks_elements() {
        cfg.n
    } else {
        cfg.store.stored_len(cfg.output_seq_len())
    }];
    let store_count = comptime![per_signal * cfg.signals_per_cube];
    let fastest = comptime![cfg.store_signals_fastest];
    let step = comptime![cfg.threads_per_cube()];
    let group = comptime![store_rounds_unrolled(&cfg, store_count.div_ceil(step))];
    if comptime![walks_units(&cfg, per_signal, fastest)] {
        // All reads first, then all stores: each round's table read, shared
        // read and store would otherwise wait on one another in turn.
        let (s, thread) = unit_in_tile(cfg.clone());
        let threads = comptime![cfg.threads_per_signal];
        let rounds = comptime![per_signal.div_ceil(threads)];
        let mut read = Array::<F>::new(comptime![4 * rounds]);
        #[unroll]
        for round in 0..rounds {
            // A ragged last round reads a real element and stores nothing of it.
            let (walked, held) = unit_walk_element(thread, round, threads, per_signal);
            let k = walked_output(select(held, walked, comptime![per_signal - 1]), cfg.clone());
            let (zr, zi, yr, yi) = read_walked_output::<F>(
                &tile_memory.re,
                &tile_memory.im,
                &tables.twiddles,
                &tables.factors,
                s,
                k,
                cfg.clone(),
            );
            read[4 * round] = zr;
            read[4 * round + 1] = zi;
            read[4 * round + 2] = yr;
            read[4 * round + 3] = yi;
        }
        #[unroll]
        for round in 0..rounds {
            let (u, held) = unit_walk_element(thread, round, threads, per_signal);
            if held {
                let k = walked_output(u, cfg.clone());
                let values = (
                    read[4 * round],
                    read[4 * round + 1],
                    read[4 * round + 2],
                    read[4 * round + 3],
                );
                write_walked_output::<F, S, N>(output, tables, at, s, k, values, cfg.clone());
            }
        }
    } else {
        let mut flat = UNIT_POS as usize;
        let (mut s, mut u) = split_flat(flat, per_signal, signals, fastest);
        while flat < store_count {
            #[unroll]
            for _ in 0..group {
                if flat < store_count {
                    store_tile_element::<F, S, N>(output, tables, tile_memory, at, s, u, cfg.clone());
                }
                flat += step;
                let (next_s, next_u) = advance_flat(s, u, step, per_signal, signals, fastest);
                s = next_s;
                u = next_u;
            }
        }
    }
}

/// Rounds of a tile's store walk (of `rounds`) unrolled together, so that their
/// shared-memory and table reads are in flight at once: all of them for the
/// untangling store of short signals (at most 8 threads each, many signals to a
/// cube), one otherwise; unrolling more lost on other lengths
/// (benches/results/2026-11-25_fewest_passes_h100.md).
fn store_rounds_unrolled(cfg: &StageConfig, rounds: usize) -> usize {
    let short_untangled = cfg.output == OutputForm::Untangled && cfg.threads_per_signal <= 8;
    if short_untangled && rounds <= 16 {
        rounds
    } else {
        1
    }
}

/// Element `u` of the store walk of the tile's signal `s` (see [`store_tile`]).
#[cube]
fn store_tile_element<F: Float, S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    tables: &StageTables<F>,
    tile_memory: &TileMemory<F>,
    at: TileCoords,
    s: usize,
    u: usize,
    #[comptime] cfg: StageConfig,
) {
    let k = walked_output(u, cfg.clone());
    let values = read_walked_output::<F>(
        &tile_memory.re,
        &tile_memory.im,
        &tables.twiddles,
        &tables.factors,
        s,
        k,
        cfg.clone(),
    );
    write_walked_output::<F, S, N>(output, tables, at, s, k, values, cfg);
}

/// The output a store walk's position `u` stands for: the element itself, or
/// the sequence index the store window keeps at `u`.
#[cube]
fn walked_output(u: usize, #[comptime] cfg: StageConfig) -> usize {
    if comptime![cfg.store_walks_elements() && cfg.output != OutputForm::Untangled] {
        u
    } else {
        window_index(u, cfg.store, comptime![cfg.output_seq_len()])
    }
}

/// What the store of output `k` of the tile's signal `s` reads from shared
/// memory: the output `Z[k]`, and for twin spectra `Z[n-k]` beside it.
#[cube]
fn read_walked_output<F: Float>(
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    twiddles: &Array<F>,
    factors: &Array<F>,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F, F, F) {
    let (zr, zi) = tile_output::<F>(smem_re, smem_im, twiddles, factors, s, k, cfg.clone());
    let mut yr = F::new(0.0);
    let mut yi = F::new(0.0);
    if comptime![cfg.output == OutputForm::TwinSpectra] {
        let mirror = select(k == 0, 0usize, comptime![cfg.n] - k);
        let (mr, mi) = tile_output::<F>(smem_re, smem_im, twiddles, factors, s, mirror, cfg.clone());
        yr = mr;
        yi = mi;
    }
    (zr, zi, yr, yi)
}

/// Stores output `k` of the tile's signal `s` from what
/// [`read_walked_output`] read.
#[cube]
fn write_walked_output<F: Float, S: Storage, N: Size>(
    output: &mut Array<Vector<S::Elem, N>>,
    tables: &StageTables<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    values: (F, F, F, F),
    #[comptime] cfg: StageConfig,
) {
    let (zr, zi, yr, yi) = values;
    if comptime![cfg.output == OutputForm::TwinSpectra] {
        // A[k] = (Z[k] + conj Z[n-k])/2 and B[k] = (Z[k] - conj Z[n-k])/2i.
        let half = F::new(0.5);
        let a = ((zr + yr) * half, (zi - yi) * half);
        let b = ((zi + yi) * half, (yr - zr) * half);
        store_element::<F, S, N>(
            output,
            &tables.post_coarse,
            &tables.post_fine,
            &tables.factors,
            at,
            2 * s,
            k,
            a,
            cfg.clone(),
        );
        store_element::<F, S, N>(
            output,
            &tables.post_coarse,
            &tables.post_fine,
            &tables.factors,
            at,
            2 * s + 1,
            k,
            b,
            cfg,
        );
    } else {
        store_slot_value::<F, S, N>(
            output,
            &tables.post_coarse,
            &tables.post_fine,
            &tables.factors,
            at,
            s,
            k,
            (zr, zi),
            cfg,
        );
    }
}

/// Output `k` of the tile's signal `s` from its transform in shared memory: the
/// value itself, the bin untangled from the half-length transform,
/// Bluestein's value times the chirp, or Rader's `x[0] + c[log k]` (`x[0] +
/// Σ a` for `X[0]`), which the passes summed in its slot.
#[cube]
pub(crate) fn tile_output<F: Float>(
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    twiddles: &Array<F>,
    factors: &Array<F>,
    s: usize,
    k: usize,
    #[comptime] cfg: StageConfig,
) -> (F, F) {
    let n = comptime![cfg.n];
    let base = s * comptime![cfg.smem_stride];
    if comptime![cfg.output == OutputForm::Untangled] {
        // X[k] = (Z[k] + conj Z[n-k])/2 - i/2 · W_2n^k · (Z[k] - conj Z[n-k])
        // k runs over 0..=n: Z[n] is Z[0].
        let za = select(k == n, 0usize, k);
        let zc = select(k == 0, 0usize, n - k);
        let (zr, zi) = (
            smem_re[base + slot(za, cfg.padded_slots)],
            smem_im[base + slot(za, cfg.padded_slots)],
        );
        let (yr, yi) = (
            smem_re[base + slot(zc, cfg.padded_slots)],
            smem_im[base + slot(zc, cfg.padded_slots)],
        );
        let (wr, wi) = table_twiddle::<F>(twiddles, k, false);
        untangle_bin::<F>(zr, zi, yr, yi, wr, wi)
    } else if comptime![cfg.convolution.is_some() && !cfg.rader()] {
        // Bluestein's output chirp.
        let (fr, fi) = table_value::<F>(factors, k);
        complex_mul::<F>(
            smem_re[base + slot(k, cfg.padded_slots)],
            smem_im[base + slot(k, cfg.padded_slots)],
            fr,
            fi,
        )
    } else if comptime![cfg.rader()] {
        // The passes added x[0] already.
        let at = base + slot(rader_slot::<F>(factors, k, true), cfg.padded_slots);
        (smem_re[at], smem_im[at])
    } else {
        (
            smem_re[base + slot(k, cfg.padded_slots)],
            smem_im[base + slot(k, cfg.padded_slots)],
        )
    }
}
