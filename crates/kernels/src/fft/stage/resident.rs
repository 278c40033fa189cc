//! Resident cubes that walk many tiles, staging each next tile's input while
//! they transform the current one, their threads holding the passes' twiddles.

use cubecl::prelude::barrier::{copy_async_checked, Barrier};
use cubecl::prelude::*;

use crate::precision::Storage;

use super::args::{FaultBuffers, ResidentInputs, StageTables, TileChecks, TileMemory, TileUnit};
use super::butterfly::table_twiddle;
use super::checksum::{check_group, group_verdict, record_verdict};
use super::config::{Round, StageConfig};
use super::coords::{advance_flat, axis_offset, split_flat, tile_coords, window_position, TileCoords, TileGrid};
use super::element::load_source;
use super::passes::{stockham_passes, PassRun};
use super::rules::{held_twiddle_offset, holds_twiddles, stores_directly};
use super::store::store_tile;

/// Starts staging the complex input of the tile's signals in `staged`, as it
/// lies in global memory (zeros outside the load window), element `k` of
/// signal `s` at `s · load_len + k` ([`TileFill`]). Asynchronous copies only
/// start the transfer: the caller commits them to a barrier and waits; plain
/// loads end at a cube barrier.
///
/// [`TileFill`]: super::config::TileFill
#[cube]
fn stage_tile<S: Storage, N: Size>(
    input: &Array<Vector<S::Elem, N>>,
    at: TileCoords,
    staged: &mut SharedMemory<Vector<S::Elem, N>>,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let load_len = comptime![cfg.load_len()];
    let in_seq = comptime![cfg.input_seq_len()];
    let threads = comptime![cfg.threads_per_cube()];
    let fastest = comptime![cfg.load_signals_fastest];
    let pairs = comptime![cfg.pairs_per_copy()];
    if comptime![pairs == 2] {
        // Whole contiguous rows: copy q of signal s moves pairs 2q and 2q + 1.
        let copies = comptime![load_len / 2];
        let mut flat = UNIT_POS as usize;
        let (mut s, mut q) = split_flat(flat, copies, signals, false);
        while flat < comptime![copies * signals] {
            let from = at.in_base + s * at.in_sc + 2 * q;
            // A source of no elements zero-fills the copy (signals past the batch).
            let len = select(at.c0 + s < at.nc, 2usize, 0usize);
            let to = s * load_len + 2 * q;
            copy_async_checked(&input.slice(from, from + len), &mut staged.slice_mut(to, to + 2), 4u32);
            let (next_s, next_q) = advance_flat(s, q, threads, copies, signals, false);
            s = next_s;
            q = next_q;
            flat += threads;
        }
    } else {
        let mut flat = UNIT_POS as usize;
        let (mut s, mut k) = split_flat(flat, load_len, signals, fastest);
        while flat < comptime![load_len * signals] {
            let (sig, axis, inside) = load_source(at, s, k, cfg.clone());
            let (held, j) = window_position(axis, cfg.load, in_seq);
            let valid = held && inside;
            let from = select(valid, sig + axis_offset(j, at.in_axis, cfg.unit_input_axis), 0usize);
            let to = s * load_len + k;
            if comptime![pairs == 1] {
                // A source of no elements zero-fills the pair.
                let len = select(valid, 1usize, 0usize);
                copy_async_checked(&input.slice(from, from + len), &mut staged.slice_mut(to, to + 1), 2u32);
            } else {
                let v = input[from];
                let mut pair = Vector::<S::Elem, N>::empty();
                pair[0] = select(valid, v[0], S::Elem::new(0.0));
                pair[1] = select(valid, v[1], S::Elem::new(0.0));
                staged[to] = pair;
            }
            let (next_s, next_k) = advance_flat(s, k, threads, load_len, signals, fastest);
            s = next_s;
            k = next_k;
            flat += threads;
        }
    }
    if comptime![pairs == 0] {
        sync_cube();
    }
}

/// How a resident cube learns that the tile it filled is in shared memory.
#[cube]
pub(super) trait TileLanding: CubeType {
    /// Ties the copies issued since the last commit to this landing.
    fn commit(&self);
    /// Returns once the committed copies have landed.
    fn wait(&self);
}

/// Asynchronous copies land on a cube barrier.
#[derive(CubeType)]
pub(super) struct CopiesLanding {
    pub(super) barrier: Shared<Barrier>,
}

#[cube]
impl TileLanding for CopiesLanding {
    fn commit(&self) {
        self.barrier.commit_copy_async();
    }

    fn wait(&self) {
        self.barrier.arrive_and_wait();
    }
}

/// Plain loads have landed when the fill returns: it ends at a cube barrier.
#[derive(CubeType)]
pub(super) struct LoadsLanded {
    #[cube(comptime)]
    pub(super) _none: (),
}

#[cube]
impl TileLanding for LoadsLanded {
    fn commit(&self) {}

    fn wait(&self) {}
}

/// The first twiddle `W^k` of each butterfly this thread runs in each pass
/// after the first, which is the same for every tile a resident cube walks:
/// held in registers, the passes wait on no table read inside the tile loop.
#[cube]
fn held_twiddles<F: Float>(twiddles: &Array<F>, thread: usize, #[comptime] cfg: StageConfig) -> Array<F> {
    let held_len = comptime![if holds_twiddles(&cfg) {
        held_twiddle_offset(&cfg, cfg.radices.len())
    } else {
        0
    }];
    let mut held = Array::<F>::new(comptime![2 * held_len.max(1)]);
    if comptime![held_len > 0] {
        let round = comptime![Round::first(&cfg)];
        let n = comptime![cfg.pass_len()];
        let threads = comptime![cfg.threads_per_signal];
        let table_step = comptime![cfg.twiddle_table_step()];
        #[unroll]
        for pass in 1..comptime![cfg.radices.len()] {
            let (r, span) = comptime![round.radix_and_span(&cfg.radices, pass)];
            let exp_step = comptime![n / (span * r) * table_step];
            #[unroll]
            for q in 0..comptime![held_twiddle_offset(&cfg, pass + 1) - held_twiddle_offset(&cfg, pass)] {
                let k = (thread + q * threads) % span;
                let (wr, wi) = table_twiddle::<F>(twiddles, k * exp_step, round.inverse);
                let at_held = comptime![2 * (held_twiddle_offset(&cfg, pass) + q)];
                held[at_held] = wr;
                held[at_held + 1] = wi;
            }
        }
    }
    held
}

/// A resident cube's walk over the tiles `CUBE_POS, CUBE_POS + CUBE_COUNT, …`:
/// each tile's input is staged while the tile before runs its passes after
/// the first, and the first pass reads it from there instead of from global
/// memory. A long signal takes a whole SM's shared memory, so no other cube's
/// work would hide its load.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn resident_tiles<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size, L: TileLanding>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    faults: &FaultBuffers<F>,
    grid: TileGrid,
    tile_memory: &mut TileMemory<F>,
    landed: &L,
    signal: usize,
    thread: usize,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let passes = comptime![cfg.radices.len()];
    let mut resident = ResidentInputs::<F, SI, NI> {
        // 16-byte copies need 16-byte-aligned destinations.
        staged: SharedMemory::<Vector<SI::Elem, NI>>::new_aligned(comptime![signals * cfg.load_len()], 16usize),
        held: held_twiddles::<F>(&tables.twiddles, thread, cfg.clone()),
    };
    // The launch has no more cubes than tiles.
    let per_tile = comptime![cfg.signals_per_tile()];
    let injects = comptime![cfg.checks.is_some_and(|c| c.inject.is_some())];
    let mut tile = CUBE_POS;
    stage_tile::<SI, NI>(
        input,
        tile_coords(tile, grid, per_tile, cfg.one_tile_row),
        &mut resident.staged,
        cfg.clone(),
    );
    landed.commit();
    while tile < grid.num_tiles {
        let following = tile + CUBE_COUNT;
        let at = tile_coords(tile, grid, per_tile, cfg.one_tile_row);
        let unit = TileUnit { at, signal, thread };
        let mut check = TileChecks::<F>::new(faults);
        let inject_here = injects && tile == faults.inject[0] as usize;
        landed.wait();
        let first = comptime![PassRun {
            pass: 0,
            until: 1,
            round: Round::first(&cfg),
        }];
        stockham_passes::<F, SI, SO, NI, NO>(
            input,
            &resident,
            output,
            tables,
            tile_memory,
            &mut check,
            inject_here,
            unit,
            first,
            cfg.clone(),
        );
        // Every read of the staged tile must be done before it is refilled: a
        // first pass that is not the last ends at a barrier already.
        if comptime![passes == 1] {
            sync_cube();
        }
        if following < grid.num_tiles {
            stage_tile::<SI, NI>(
                input,
                tile_coords(following, grid, per_tile, cfg.one_tile_row),
                &mut resident.staged,
                cfg.clone(),
            );
            landed.commit();
        }
        if comptime![passes > 1] {
            let rest = comptime![PassRun {
                pass: 1,
                until: passes,
                round: Round::first(&cfg),
            }];
            stockham_passes::<F, SI, SO, NI, NO>(
                input,
                &resident,
                output,
                tables,
                tile_memory,
                &mut check,
                inject_here,
                unit,
                rest,
                cfg.clone(),
            );
        }
        if comptime![!stores_directly(&cfg)] {
            store_tile::<F, SO, NO>(output, tables, tile_memory, at, cfg.clone());
        }
        if comptime![cfg.checks.is_some()] {
            let (faulty, injected) = group_verdict::<F>(
                &faults.checks,
                &check.sums,
                &mut tile_memory.re,
                &mut tile_memory.im,
                signal,
                thread,
                cfg.clone(),
            );
            let entry = tile * signals + check_group(signal, cfg.clone());
            record_verdict(&faults.faults, faulty, injected, entry, cfg.clone());
            // The leaders read their sums from the tile memory the next tile's passes write.
            sync_cube();
        }
        tile = following;
    }
}
