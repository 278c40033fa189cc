//! The launchable stage kernel.

use cubecl::prelude::barrier::Barrier;
use cubecl::prelude::*;

use crate::precision::Storage;

use super::args::{FaultBuffers, StageTables, TileChecks, TileMemory, TileUnit};
use super::checksum::{check_group, group_member, group_verdict, record_verdict};
use super::config::StageConfig;
use super::coords::{tile_coords, unit_in_tile, TileGrid};
use super::load::load_tile;
use super::packed::fold_packed_tile;
use super::passes::transform_checked_tile;
use super::resident::{resident_tiles, CopiesLanding, LoadsLanded};
use super::rules::{folds_in_shared, loads_directly, stores_directly};
use super::store::store_tile;
use crate::fault::{FAULT_HEADER, REPAIR_CAPACITY};

/// Transforms tiles of equal-length signals. Without [`StageConfig::prefetch`]
/// each cube takes one tile: it loads it (or its first pass reads global
/// memory), transforms it and stores it. With it, `CUBE_COUNT` resident cubes
/// each walk many tiles, staging the next tile's input while transforming
/// the current one ([`resident_tiles`]). With [`StageConfig::checks`] each
/// signal's transform is checked against `faults.checks` (`fft/fault.rs`),
/// faults counted in `faults.faults` (detected, corrected, injected) and, to
/// correct, faulty signals listed there for the stage's repair launch (the
/// same kernel with [`StageChecks::repair`](crate::fft::StageChecks::repair));
/// `faults.inject` holds a test's flip (tile, unit, value, bit).
#[cube(launch_unchecked)]
pub fn fft_stage_kernel<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    faults: &FaultBuffers<F>,
    grid: TileGrid,
    #[comptime] cfg: StageConfig,
) {
    let tile_len = comptime![cfg.signals_per_cube * cfg.smem_stride];
    let mut tile_memory = TileMemory::<F> {
        re: SharedMemory::<F>::new(tile_len),
        im: SharedMemory::<F>::new(tile_len),
    };
    let (signal, thread) = unit_in_tile(cfg.clone());

    if comptime![cfg.prefetch.is_some()] {
        if comptime![cfg.pairs_per_copy() > 0] {
            let landed = CopiesLanding {
                barrier: Barrier::shared(CUBE_DIM, UNIT_POS == 0),
            };
            resident_tiles::<F, SI, SO, NI, NO, CopiesLanding>(
                input,
                output,
                tables,
                faults,
                grid,
                &mut tile_memory,
                &landed,
                signal,
                thread,
                cfg,
            );
        } else {
            resident_tiles::<F, SI, SO, NI, NO, LoadsLanded>(
                input,
                output,
                tables,
                faults,
                grid,
                &mut tile_memory,
                &LoadsLanded { _none: () },
                signal,
                thread,
                cfg,
            );
        }
    } else if comptime![cfg.checks.is_some_and(|c| c.repair)] {
        repair_listed_signals::<F, SI, SO, NI, NO>(
            input,
            output,
            tables,
            faults,
            grid,
            &mut tile_memory,
            signal,
            thread,
            cfg,
        );
    } else {
        let tile = CUBE_POS;
        if tile >= grid.num_tiles {
            terminate!();
        }
        let at = tile_coords(tile, grid, comptime![cfg.signals_per_tile()], cfg.one_tile_row);
        let injects = comptime![cfg.checks.is_some_and(|c| c.inject.is_some())];
        let inject_here = injects && tile == faults.inject[0] as usize;
        let mut check = TileChecks::<F>::new(faults);
        tile_body::<F, SI, SO, NI, NO>(
            input,
            output,
            tables,
            &mut tile_memory,
            &mut check,
            inject_here,
            TileUnit { at, signal, thread },
            cfg.clone(),
        );
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
            let entry = tile * comptime![cfg.signals_per_cube] + check_group(signal, cfg.clone());
            record_verdict(&faults.faults, faulty, injected, entry, cfg);
        }
    }
}

/// The repair launch of a correcting stage, one cube, right after the
/// checking launch: transforms again the tile of each signal (or tile:
/// [`check_group`]) that launch listed, from the input, which no stage
/// overwrites; counts it corrected when its checksums agree now, and empties
/// the list.
#[cube]
#[allow(clippy::too_many_arguments)]
fn repair_listed_signals<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    faults: &FaultBuffers<F>,
    grid: TileGrid,
    tile_memory: &mut TileMemory<F>,
    signal: usize,
    thread: usize,
    #[comptime] cfg: StageConfig,
) {
    let signals = comptime![cfg.signals_per_cube];
    let mut listed = faults.faults[3].load() as usize;
    if listed > comptime![REPAIR_CAPACITY] {
        listed = comptime![REPAIR_CAPACITY];
    }
    let mut i = 0usize;
    while i < listed {
        let entry = faults.faults[comptime![FAULT_HEADER] + i].load() as usize;
        let at = tile_coords(
            entry / signals,
            grid,
            comptime![cfg.signals_per_tile()],
            cfg.one_tile_row,
        );
        let mut check = TileChecks::<F>::new(faults);
        tile_body::<F, SI, SO, NI, NO>(
            input,
            output,
            tables,
            tile_memory,
            &mut check,
            false,
            TileUnit { at, signal, thread },
            cfg.clone(),
        );
        let (faulty, _) = group_verdict::<F>(
            &faults.checks,
            &check.sums,
            &mut tile_memory.re,
            &mut tile_memory.im,
            signal,
            thread,
            cfg.clone(),
        );
        let leads = group_member(thread, cfg.clone()) == 0;
        if leads && check_group(signal, cfg.clone()) == entry % signals && !faulty {
            faults.faults[1].fetch_add(1u32);
        }
        // The leaders' sums in the tile memory are read before the next tile.
        sync_cube();
        i += 1;
    }
    // Every unit read the count before its first barrier (or read zero).
    if UNIT_POS == 0 {
        faults.faults[3].store(0u32);
    }
}

/// One tile of a cube that takes one: its load (unless the first pass reads
/// global memory), transform and store (unless the last pass writes it),
/// checked as [`transform_checked_tile`] says. A resident cube transforms a
/// faulty tile again through it.
#[cube]
#[allow(clippy::too_many_arguments)]
fn tile_body<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    inject_here: bool,
    unit: TileUnit,
    #[comptime] cfg: StageConfig,
) {
    if comptime![!loads_directly(&cfg)] {
        load_tile::<F, SI, NI>(
            input,
            &tables.factors,
            unit.at,
            &mut tile_memory.re,
            &mut tile_memory.im,
            cfg.clone(),
        );
    }
    if comptime![folds_in_shared(&cfg)] {
        fold_packed_tile::<F>(
            &mut tile_memory.re,
            &mut tile_memory.im,
            &tables.twiddles,
            unit.signal,
            unit.thread,
            cfg.clone(),
        );
    }
    transform_checked_tile::<F, SI, SO, NI, NO>(
        input,
        output,
        tables,
        tile_memory,
        check,
        inject_here,
        unit,
        cfg.clone(),
    );
    if comptime![!stores_directly(&cfg)] {
        store_tile::<F, SO, NO>(output, tables, tile_memory, unit.at, cfg);
    }
}
