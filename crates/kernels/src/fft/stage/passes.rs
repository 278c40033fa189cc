//! The Stockham passes over a tile, and what a tile's transform reads and
//! yields.

use cubecl::prelude::*;

use crate::fft::FaultSite;
use crate::precision::{load_value, Storage};

use super::args::{tile_sums, ResidentInputs, StageTables, TileChecks, TileMemory, TileUnit};
use super::butterfly::{complex_mul, small_dft, table_twiddle, table_value};
use super::checksum::{check_butterfly_outputs, check_input, executed_pass, flip_register, flip_shared, injects_at};
use super::config::{OutputForm, Round, StageConfig};
use super::convolution::turn_to_inverse;
use super::coords::slot;
use super::element::store_slot_value;
use super::packed::{store_untangled_unit, untangled_units};
use super::pass_input::{butterfly_needed, read_pass_element, PassSignal};
use super::rules::{held_twiddle_offset, holds_twiddles, loads_directly, pass_split, stores_directly};
use super::split::split_first_pass;

/// The passes a call of [`stockham_passes`] runs: pass `pass` of `round`
/// and the following ones up to `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct PassRun {
    pub pass: usize,
    pub until: usize,
    pub round: Round,
}

/// Stockham pass `pass` (radix `r`, the round's `pass`-th) over every signal of
/// the tile, then the following passes up to `until`. Pass `p` reads element
/// `i + j·n/r`, twiddles it by `W^{j·(i mod span)}` and writes DFT output `t`
/// to `(i - i mod span)·r + i mod span + t·span`. The passes run over
/// [`StageConfig::pass_len`] as `round` says.
#[cube]
// The comptime switch around the untangling store stays an outer `if`; the
// cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::collapsible_if, clippy::single_match)]
pub(super) fn stockham_passes<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    resident: &ResidentInputs<F, SI, NI>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    inject_here: bool,
    unit: TileUnit,
    #[comptime] run: PassRun,
    #[comptime] cfg: StageConfig,
) {
    let (pass, until, round) = comptime![(run.pass, run.until, run.round)];
    let n = comptime![cfg.pass_len()];
    let (r, span) = comptime![round.radix_and_span(&cfg.radices, pass)];
    let inverse = comptime![round.inverse];
    let last = comptime![pass + 1 == cfg.radices.len()];
    let turn = comptime![last && round.turn];
    // A resident cube's first pass reads the input it staged, as it lies in global memory.
    let from_staged = comptime![pass == 0 && cfg.prefetch.is_some()];
    let from_global = comptime![pass == 0 && loads_directly(&cfg) && !from_staged];
    let to_global = comptime![last && stores_directly(&cfg)];
    let threads = comptime![cfg.threads_per_signal];
    let quarter_n = comptime![n / r];
    // An untangling last pass gives each thread butterfly u and its mirror
    // n/r - u, whose outputs are the bins k and n - k each output needs.
    let untangle = comptime![to_global && cfg.output == OutputForm::Untangled];
    let units = comptime![if untangle {
        untangled_units(quarter_n)
    } else {
        quarter_n
    }];
    let slots = comptime![if untangle { 2usize } else { 1usize }];
    let per_thread = comptime![units.div_ceil(threads)];
    // Mixed radices leave some threads without a butterfly in some passes.
    let ragged = comptime![per_thread * threads != units];
    // Twiddle table holds `n * table_step` entries (twice n for packed real stages).
    let table_step = comptime![cfg.twiddle_table_step()];
    let exp_step = comptime![n / (span * r) * table_step];
    let base = unit.signal * comptime![cfg.smem_stride];
    let executed = comptime![executed_pass(&cfg, pass, round.reversed)];
    // The pass whose outputs are the stage transform's (a convolution's
    // single pass turns and ends it at once).
    let transform_ends = comptime![last && (!turn || cfg.radices.len() == 1)];

    if comptime![pass_split(&cfg, &round, pass) > 1] {
        split_first_pass::<F, SI, SO, NI, NO>(
            input,
            &resident.staged,
            output,
            tables,
            tile_memory,
            check,
            unit.at,
            r,
            inverse,
            cfg.clone(),
        );
    } else {
        let mut re = Array::<F>::new(comptime![per_thread * slots * r]);
        let mut im = Array::<F>::new(comptime![per_thread * slots * r]);

        #[unroll]
        for q in 0..per_thread {
            let u = unit.thread + q * threads;
            let exists = !ragged || u < units;
            #[unroll]
            for h in 0..slots {
                // The mirror of butterfly 0 is itself; an even n/r pairs it with n/2r.
                let i = if comptime![h == 0] {
                    u
                } else {
                    select(u == 0, comptime![quarter_n / 2], quarter_n - u)
                };
                let mut needed = exists && (!to_global || untangle || butterfly_needed(i, cfg.clone(), r));
                if comptime![h == 1 && quarter_n % 2 == 1] {
                    needed = needed && u != 0;
                }
                let at_slot = comptime![(q * slots + h) * r];
                if needed {
                    let k = i % span;
                    // One table read per butterfly: W^j = (W^1)^j by recurrence.
                    let (w1r, w1i) = if comptime![span > 1 && holds_twiddles(&cfg)] {
                        let at_held = comptime![2 * (held_twiddle_offset(&cfg, pass) + q)];
                        (resident.held[at_held], resident.held[at_held + 1])
                    } else if comptime![span > 1] {
                        table_twiddle::<F>(&tables.twiddles, k * exp_step, inverse)
                    } else {
                        (F::new(1.0), F::new(0.0))
                    };
                    let mut wr = F::new(1.0);
                    let mut wi = F::new(0.0);
                    #[unroll]
                    for j in 0..r {
                        let (mut xr, mut xi) = read_pass_element::<F, SI, NI>(
                            input,
                            &resident.staged,
                            tables,
                            tile_memory,
                            PassSignal {
                                at: unit.at,
                                signal: unit.signal,
                                base,
                            },
                            i,
                            j * quarter_n,
                            pass,
                            cfg.clone(),
                        );
                        if comptime![pass == 0] {
                            match comptime![round.chirp] {
                                Some(len) => {
                                    let e = i + j * quarter_n;
                                    let (fr, fi) = table_value::<F>(&tables.factors, select(e < len, e, 0usize));
                                    let (tr, ti) = complex_mul::<F>(xr, xi, fr, fi);
                                    // `select`, not a product by zero: the slots past `len` were never written.
                                    let zero = F::new(0.0);
                                    xr = select(e < len, tr, zero);
                                    xi = select(e < len, ti, zero);
                                }
                                None => {}
                            }
                            check_input::<F>(&check.checks, &mut check.sums, i + j * quarter_n, xr, xi, cfg.clone());
                        }
                        if comptime![span > 1] && j > 0 {
                            if comptime![j == 1] {
                                wr = w1r;
                                wi = w1i;
                            } else {
                                let (nr, ni) = complex_mul::<F>(wr, wi, w1r, w1i);
                                wr = nr;
                                wi = ni;
                            }
                            let (yr, yi) = complex_mul::<F>(xr, xi, wr, wi);
                            re[at_slot + j] = yr;
                            im[at_slot + j] = yi;
                        } else {
                            re[at_slot + j] = xr;
                            im[at_slot + j] = xi;
                        }
                    }
                    small_dft::<F>(&mut re, &mut im, at_slot, 1usize, r, inverse);
                    if comptime![turn] {
                        turn_to_inverse::<F>(
                            &mut re,
                            &mut im,
                            &tables.factors,
                            &mut tile_memory.re,
                            &mut tile_memory.im,
                            unit.signal,
                            i,
                            at_slot,
                            r,
                            cfg.clone(),
                        );
                    }
                    if comptime![injects_at(&cfg, FaultSite::Register, executed)] {
                        flip_register::<F>(
                            &mut re,
                            &mut im,
                            &check.inject,
                            &mut check.sums,
                            inject_here,
                            comptime![q * slots + h],
                            comptime![per_thread * slots],
                            r,
                        );
                    }
                    if comptime![transform_ends] {
                        check_butterfly_outputs::<F>(
                            &check.checks,
                            &mut check.sums,
                            i,
                            &re,
                            &im,
                            at_slot,
                            r,
                            quarter_n,
                            cfg.clone(),
                        );
                    }
                }
                if to_global && !untangle && needed {
                    // Last pass: span = n / r, so output t of butterfly i is element i + t·n/r.
                    #[unroll]
                    for t in 0..r {
                        store_slot_value::<F, SO, NO>(
                            output,
                            &tables.post_coarse,
                            &tables.post_fine,
                            &tables.factors,
                            unit.at,
                            unit.signal,
                            i + t * quarter_n,
                            (re[at_slot + t], im[at_slot + t]),
                            cfg.clone(),
                        );
                    }
                }
            }
            // Only an untangling pass has the mirror slots this indexes.
            if comptime![untangle] {
                if exists {
                    store_untangled_unit::<F, SO, NO>(
                        output,
                        tables,
                        unit.at,
                        unit.signal,
                        u,
                        &re,
                        &im,
                        comptime![q * slots * r],
                        r,
                        cfg.clone(),
                    );
                }
            }
        }
        if !to_global {
            if !from_global {
                // In place: every read of this pass must land before any write.
                sync_cube();
            }
            if comptime![from_staged && cfg.rader()] {
                // Rader's x[0], which the turn and the last pass add, into
                // the slot after the convolution's before the staged tile is
                // refilled after this pass.
                if unit.thread == 0 {
                    let x0 = resident.staged[unit.signal * comptime![cfg.load_len()]];
                    let at = base + slot(comptime![cfg.n - 1], cfg.padded_slots);
                    tile_memory.re[at] = load_value::<F, SI>(x0[0]);
                    tile_memory.im[at] = load_value::<F, SI>(x0[1]);
                }
            }
            // Rader's last inverse pass adds x[0] (in the slot after the
            // convolution's) to every entry as it writes it, so that the store
            // reads one slot an output.
            let adds_x0 = comptime![cfg.rader() && last && (round.reversed || cfg.radices.len() == 1)];
            let mut x0r = F::new(0.0);
            let mut x0i = F::new(0.0);
            if comptime![adds_x0] {
                let x0 = base + slot(comptime![cfg.n - 1], cfg.padded_slots);
                x0r = tile_memory.re[x0];
                x0i = tile_memory.im[x0];
            }
            #[unroll]
            for q in 0..per_thread {
                let i = unit.thread + q * threads;
                if !ragged || i < quarter_n {
                    // A turning pass writes as the inverse's first pass (span 1) would.
                    let written = comptime![if turn { 1usize } else { span }];
                    let k = i % written;
                    let dst = (i - k) * r + k;
                    #[unroll]
                    for t in 0..r {
                        let at = base + slot(dst + t * written, cfg.padded_slots);
                        if comptime![adds_x0] {
                            tile_memory.re[at] = re[q * r + t] + x0r;
                            tile_memory.im[at] = im[q * r + t] + x0i;
                        } else {
                            tile_memory.re[at] = re[q * r + t];
                            tile_memory.im[at] = im[q * r + t];
                        }
                    }
                }
            }
            sync_cube();
            // Between passes only: the tile the last pass leaves for the store is
            // past the checksums (docs/abft.md).
            if comptime![injects_at(&cfg, FaultSite::Shared, executed) && !transform_ends] {
                if inject_here {
                    flip_shared::<F>(
                        &mut tile_memory.re,
                        &mut tile_memory.im,
                        &check.inject,
                        &mut check.sums,
                        cfg.clone(),
                    );
                }
            }
        }
    }

    // After a turn the passes go on from the inverse's second.
    let (following, upto, next_round) = comptime![if turn {
        (1usize, cfg.radices.len(), Round::inverse_of_turn())
    } else {
        (pass + 1, until, round)
    }];
    if comptime![following < upto] {
        let next = comptime![PassRun {
            pass: following,
            until: upto,
            round: next_round,
        }];
        stockham_passes::<F, SI, SO, NI, NO>(
            input,
            resident,
            output,
            tables,
            tile_memory,
            check,
            inject_here,
            unit,
            next,
            cfg,
        );
    }
}

/// The complex transform of every signal of the tile: the Stockham passes, or
/// the two transforms of a [`Convolution`], which turn from one to the other
/// at the kernel's spectrum in registers ([`Round::turn`]; Rader's `Σ a`
/// kept aside there), Bluestein's with the chirp applied as the first pass
/// reads and in [`tile_output`].
///
/// Turning in registers saves the kernel's product a pass over shared memory
/// and a barrier (benches/results/2026-11-25_convolution_turn_h100.md).
///
/// [`Convolution`]: super::config::Convolution
#[cube]
pub(crate) fn transform_tile<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    unit: TileUnit,
    #[comptime] cfg: StageConfig,
) {
    // Callers other than the stage kernel check nothing: their stages have no `checks`.
    let mut unchecked = TileChecks::<F> {
        checks: Array::<F>::new(1usize),
        sums: tile_sums::<F>(),
        inject: Array::<u32>::new(1usize),
    };
    transform_checked_tile::<F, SI, SO, NI, NO>(input, output, tables, tile_memory, &mut unchecked, false, unit, cfg);
}

/// [`transform_tile`] with the stage's checksums summed into `check` and the
/// injection (`check.inject`, where `inject_here`) made (`fft/fault.rs`).
#[cube]
#[allow(clippy::too_many_arguments)]
pub(crate) fn transform_checked_tile<F: Float, SI: Storage, SO: Storage, NI: Size, NO: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    inject_here: bool,
    unit: TileUnit,
    #[comptime] cfg: StageConfig,
) {
    if comptime![!cfg.radices.is_empty()] {
        let run = comptime![PassRun {
            pass: 0,
            until: cfg.radices.len(),
            round: Round::first(&cfg),
        }];
        // Only a resident cube's passes read staged input (see `resident_tiles`),
        // nor do other cubes hold twiddles (see `held_twiddles`).
        let unstaged = ResidentInputs::<F, SI, NI> {
            staged: SharedMemory::<Vector<SI::Elem, NI>>::new(1usize),
            held: Array::<F>::new(1usize),
        };
        stockham_passes::<F, SI, SO, NI, NO>(
            input,
            &unstaged,
            output,
            tables,
            tile_memory,
            check,
            inject_here,
            unit,
            run,
            cfg.clone(),
        );
    }
}
