//! Stores of the tile's outputs to global memory, and the host rule that
//! chooses whether the last pass writes them directly.

use cubecl::prelude::*;

use super::butterfly::{complex_mul, table_twiddle, table_value};
use super::config::{OutputForm, StageConfig};
use super::coords::{
    advance_flat, axis_index, axis_offset, fold_dim_index, split_flat, unit_in_tile, window_index, window_position,
    within_fold, TileCoords,
};
use super::load::{direct_runs_coalesce, unit_walk_element, walks_units};
use super::packed::untangles_in_registers;
use super::passes::tile_output;
use crate::pairs::write_pair;

/// Writes transform output `k` of the tile's signal `s` if the store window
/// holds it: four-step twiddled, multiplied by its factor, scaled, and written
/// in the stage's output form.
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::single_match, clippy::collapsible_match)]
pub(super) fn store_element<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    value: (F, F),
    #[comptime] cfg: StageConfig,
) {
    let out_seq = comptime![cfg.output_seq_len()];
    let scale = F::new(comptime![f32::from_bits(cfg.scale_bits)]);
    let sig = at.out_base + s * at.out_sc;
    let d = fold_dim_index(at.b, at.c0 + s, cfg.store_fold);
    let axis = axis_index(k, d, cfg.store_fold);
    let inside = at.c0 + s < at.nc && within_fold(axis, comptime![cfg.n], cfg.store_fold);
    let (mut vr, mut vi) = value;
    match comptime![cfg.post_twiddle] {
        Some(pt) => {
            let d2 = if comptime![pt.dim == 1] { at.b } else { at.c0 + s };
            let e = (d2 * k) % comptime![pt.total];
            let (cr, ci) = table_twiddle::<F>(post_coarse, e / comptime![pt.fine_len], cfg.inverse);
            let (fr, fi) = table_twiddle::<F>(post_fine, e % comptime![pt.fine_len], cfg.inverse);
            let (wr, wi) = complex_mul::<F>(cr, ci, fr, fi);
            let (tr, ti) = complex_mul::<F>(vr, vi, wr, wi);
            vr = tr;
            vi = ti;
        }
        None => {}
    }
    match comptime![cfg.store_factor] {
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
    match comptime![cfg.output] {
        OutputForm::RealPairs => {
            let (held0, j0) = window_position(2 * axis, cfg.store, out_seq);
            if comptime![cfg.vector_output] {
                // A contiguous axis, an even signal offset and whole pairs in the window.
                if held0 && inside {
                    write_pair::<F, N>(output, (sig + j0) / 2, vr * scale, vi * scale, true);
                }
            } else {
                let (held1, j1) = window_position(2 * axis + 1, cfg.store, out_seq);
                if held0 && inside {
                    output[sig + axis_offset(j0, at.out_axis, cfg.unit_output_axis)] = Vector::new(vr * scale);
                }
                if held1 && inside {
                    output[sig + axis_offset(j1, at.out_axis, cfg.unit_output_axis)] = Vector::new(vi * scale);
                }
            }
        }
        OutputForm::RealPart | OutputForm::TwinReals => {
            let (held, j) = window_position(axis, cfg.store, out_seq);
            if held && inside {
                output[sig + axis_offset(j, at.out_axis, cfg.unit_output_axis)] = Vector::new(vr * scale);
            }
        }
        _ => {
            let (held, j) = window_position(axis, cfg.store, out_seq);
            if held && inside {
                write_pair::<F, N>(
                    output,
                    sig + axis_offset(j, at.out_axis, cfg.unit_output_axis),
                    vr * scale,
                    vi * scale,
                    cfg.vector_output,
                );
            }
        }
    }
}

/// Writes transform output `k` of the tile's slot `s` ([`store_element`]):
/// a twin slot's real and imaginary parts go to its two signals.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn store_slot_value<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    at: TileCoords,
    s: usize,
    k: usize,
    value: (F, F),
    #[comptime] cfg: StageConfig,
) {
    if comptime![cfg.output == OutputForm::TwinReals] {
        let (vr, vi) = value;
        let zero = F::new(0.0);
        store_element::<F, N>(
            output,
            post_coarse,
            post_fine,
            factors,
            at,
            2 * s,
            k,
            (vr, zero),
            cfg.clone(),
        );
        store_element::<F, N>(
            output,
            post_coarse,
            post_fine,
            factors,
            at,
            2 * s + 1,
            k,
            (vi, zero),
            cfg,
        );
    } else {
        store_element::<F, N>(output, post_coarse, post_fine, factors, at, s, k, value, cfg);
    }
}

/// Whether the last pass writes global memory directly: not when the caller
/// takes the tile, not after a convolution's last step, nor when the store
/// walks the tile in another order than the passes (the transposed store of a
/// four-step pass), nor when the writes would not coalesce; an untangling
/// store only where [`untangles_in_registers`].
pub(crate) fn stores_directly(cfg: &StageConfig) -> bool {
    !cfg.store_shared
        && cfg.convolution.is_none()
        && cfg
            .radices
            .last()
            .is_some_and(|&r| direct_runs_coalesce(cfg, r, cfg.store_signals_fastest))
        && cfg.store_signals_fastest == cfg.load_signals_fastest
        && (cfg.output != OutputForm::Untangled || untangles_in_registers(cfg))
        && cfg.output != OutputForm::TwinSpectra
}

/// Writes the tile's outputs from shared memory, in the order the output coalesces in.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn store_tile<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
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
            let (zr, zi, yr, yi) = read_walked_output::<F>(smem_re, smem_im, twiddles, factors, s, k, cfg.clone());
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
                write_walked_output::<F, N>(output, post_coarse, post_fine, factors, at, s, k, values, cfg.clone());
            }
        }
    } else {
        let mut flat = UNIT_POS as usize;
        let (mut s, mut u) = split_flat(flat, per_signal, signals, fastest);
        while flat < store_count {
            #[unroll]
            for _ in 0..group {
                if flat < store_count {
                    store_tile_element::<F, N>(
                        output,
                        twiddles,
                        post_coarse,
                        post_fine,
                        factors,
                        smem_re,
                        smem_im,
                        at,
                        s,
                        u,
                        cfg.clone(),
                    );
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
#[allow(clippy::too_many_arguments)]
fn store_tile_element<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    twiddles: &Array<F>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
    smem_re: &SharedMemory<F>,
    smem_im: &SharedMemory<F>,
    at: TileCoords,
    s: usize,
    u: usize,
    #[comptime] cfg: StageConfig,
) {
    let k = walked_output(u, cfg.clone());
    let values = read_walked_output::<F>(smem_re, smem_im, twiddles, factors, s, k, cfg.clone());
    write_walked_output::<F, N>(output, post_coarse, post_fine, factors, at, s, k, values, cfg);
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
#[allow(clippy::too_many_arguments)]
fn write_walked_output<F: Float, N: Size>(
    output: &mut Array<Vector<F, N>>,
    post_coarse: &Array<F>,
    post_fine: &Array<F>,
    factors: &Array<F>,
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
        store_element::<F, N>(output, post_coarse, post_fine, factors, at, 2 * s, k, a, cfg.clone());
        store_element::<F, N>(output, post_coarse, post_fine, factors, at, 2 * s + 1, k, b, cfg);
    } else {
        store_slot_value::<F, N>(output, post_coarse, post_fine, factors, at, s, k, (zr, zi), cfg);
    }
}
