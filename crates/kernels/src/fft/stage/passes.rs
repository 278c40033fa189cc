//! The Stockham passes over a tile, and what a tile's transform reads and
//! yields.

use cubecl::prelude::*;

use crate::fft::FaultSite;
use crate::precision::{load_value, Storage};

use super::args::{tile_sums, Registers, ResidentInputs, StageTables, TileChecks, TileMemory, TileUnit};
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

/// One Stockham pass as compiled: the stage, the run it begins, and the
/// sizes and switches that follow from them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Pass {
    pub cfg: StageConfig,
    pub run: PassRun,
    /// The length the passes run over ([`StageConfig::pass_len`]).
    pub n: usize,
    pub r: usize,
    pub span: usize,
    /// Butterflies of the pass, `n / r`.
    pub quarter_n: usize,
    pub threads: usize,
    /// Butterflies a thread's loop walks: `quarter_n`, or an untangling
    /// pass's pairs of a butterfly and its mirror `n/r - u`.
    pub units: usize,
    /// Butterflies per unit: 2 where untangling, else 1.
    pub slots: usize,
    pub per_thread: usize,
    /// Mixed radices leave some threads without a butterfly in some passes.
    pub ragged: bool,
    /// The twiddle table's step between `W^k` and `W^{k+1}` of this pass.
    pub exp_step: usize,
    /// The pass as executed, counting a reversed round backwards (fault sites).
    pub executed: usize,
    pub last: bool,
    /// A convolution's last forward pass, which turns to the inverse in registers.
    pub turn: bool,
    /// A resident cube's first pass reads the input it staged, as it lies in global memory.
    pub from_staged: bool,
    pub from_global: bool,
    pub to_global: bool,
    pub untangle: bool,
    /// The pass whose outputs are the stage transform's (a convolution's
    /// single pass turns and ends it at once).
    pub transform_ends: bool,
}

impl Pass {
    pub(super) fn new(cfg: &StageConfig, run: PassRun) -> Self {
        let (pass, round) = (run.pass, run.round);
        let n = cfg.pass_len();
        let (r, span) = round.radix_and_span(&cfg.radices, pass);
        let last = pass + 1 == cfg.radices.len();
        let turn = last && round.turn;
        let from_staged = pass == 0 && cfg.prefetch.is_some();
        let to_global = last && stores_directly(cfg);
        let quarter_n = n / r;
        let untangle = to_global && cfg.output == OutputForm::Untangled;
        let units = if untangle {
            untangled_units(quarter_n)
        } else {
            quarter_n
        };
        let threads = cfg.threads_per_signal;
        let per_thread = units.div_ceil(threads);
        Pass {
            cfg: cfg.clone(),
            run,
            n,
            r,
            span,
            quarter_n,
            threads,
            units,
            slots: if untangle { 2 } else { 1 },
            per_thread,
            ragged: per_thread * threads != units,
            exp_step: n / (span * r) * cfg.twiddle_table_step(),
            executed: executed_pass(cfg, pass, round.reversed),
            last,
            turn,
            from_staged,
            from_global: pass == 0 && loads_directly(cfg) && !from_staged,
            to_global,
            untangle,
            transform_ends: last && (!turn || cfg.radices.len() == 1),
        }
    }

    /// The passes after this one, if any: after a turn, the inverse's from its second.
    pub(super) fn following(&self) -> Option<PassRun> {
        let (pass, until, round) = if self.turn {
            (1, self.cfg.radices.len(), Round::inverse_of_turn())
        } else {
            (self.run.pass + 1, self.run.until, self.run.round)
        };
        (pass < until).then_some(PassRun { pass, until, round })
    }

    /// Rader's last inverse pass adds x[0] (in the slot after the
    /// convolution's) to every entry as it writes it, so that the store reads
    /// one slot an output (benches/results/2026-11-26_resident_split_h100.md).
    fn adds_x0(&self) -> bool {
        self.cfg.rader() && self.last && (self.run.round.reversed || self.cfg.radices.len() == 1)
    }
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
    let pass = comptime![Pass::new(&cfg, run)];
    let (r, quarter_n, threads) = comptime![(pass.r, pass.quarter_n, pass.threads)];
    let (units, slots, per_thread, ragged) = comptime![(pass.units, pass.slots, pass.per_thread, pass.ragged)];
    let (to_global, untangle) = comptime![(pass.to_global, pass.untangle)];
    let signal = PassSignal {
        at: unit.at,
        signal: unit.signal,
        base: unit.signal * comptime![cfg.smem_stride],
    };

    if comptime![pass_split(&cfg, &run.round, run.pass) > 1] {
        split_first_pass::<F, SI, SO, NI, NO>(
            input,
            &resident.staged,
            output,
            tables,
            tile_memory,
            check,
            unit.at,
            r,
            run.round.inverse,
            cfg.clone(),
        );
    } else {
        let mut regs = Registers::<F> {
            re: Array::<F>::new(comptime![per_thread * slots * r]),
            im: Array::<F>::new(comptime![per_thread * slots * r]),
        };

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
                    butterfly::<F, SI, NI>(
                        input,
                        resident,
                        tables,
                        tile_memory,
                        check,
                        &mut regs,
                        signal,
                        i,
                        inject_here,
                        comptime![(q, h, pass.clone())],
                    );
                }
                if to_global && !untangle && needed {
                    store_butterfly::<F, SO, NO>(output, tables, unit, i, &regs, at_slot, pass.clone());
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
                        &regs.re,
                        &regs.im,
                        comptime![q * slots * r],
                        r,
                        cfg.clone(),
                    );
                }
            }
        }
        if !to_global {
            write_pass_to_tile::<F, SI, NI>(
                resident,
                tile_memory,
                check,
                &regs,
                inject_here,
                unit,
                signal.base,
                pass.clone(),
            );
        }
    }

    match comptime![pass.following()] {
        Some(next) => {
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
        None => {}
    }
}

/// Butterfly `i` of the pass (the `q`-th of its thread, the `h`-th of its
/// unit) in registers: its `r` inputs read and twiddled,
/// `x[i + j·n/r]·W^{j·(i mod span)}` (a first pass applies Bluestein's chirp
/// and sums the input checksums), then [`transform_butterfly`].
#[cube]
// The cube macro expands a comptime `match`, not an `if let`.
#[allow(clippy::too_many_arguments, clippy::single_match)]
fn butterfly<F: Float, SI: Storage, NI: Size>(
    input: &Array<Vector<SI::Elem, NI>>,
    resident: &ResidentInputs<F, SI, NI>,
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    regs: &mut Registers<F>,
    signal: PassSignal,
    i: usize,
    inject_here: bool,
    #[comptime] at: (usize, usize, Pass),
) {
    let (q, h, pass) = at;
    let held = comptime![q * pass.slots + h];
    let at_slot = comptime![held * pass.r];
    let cfg = comptime![pass.cfg.clone()];
    let (r, span, quarter_n) = comptime![(pass.r, pass.span, pass.quarter_n)];
    let (first, inverse) = comptime![(pass.run.pass == 0, pass.run.round.inverse)];
    let k = i % span;
    // One table read per butterfly: W^j = (W^1)^j by recurrence.
    let (w1r, w1i) = if comptime![span > 1 && holds_twiddles(&cfg)] {
        let at_held = comptime![2 * (held_twiddle_offset(&cfg, pass.run.pass) + q)];
        (resident.held[at_held], resident.held[at_held + 1])
    } else if comptime![span > 1] {
        table_twiddle::<F>(&tables.twiddles, k * comptime![pass.exp_step], inverse)
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
            signal,
            i,
            j * quarter_n,
            pass.run.pass,
            cfg.clone(),
        );
        if comptime![first] {
            match comptime![pass.run.round.chirp] {
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
            regs.re[at_slot + j] = yr;
            regs.im[at_slot + j] = yi;
        } else {
            regs.re[at_slot + j] = xr;
            regs.im[at_slot + j] = xi;
        }
    }
    // Called while the twiddles are live, so that its locals are not theirs
    // reused: the generated kernels stay as they were (benches/kernel_sources.py).
    transform_butterfly::<F>(
        tables,
        tile_memory,
        check,
        regs,
        inject_here,
        signal.signal,
        i,
        comptime![(held, pass)],
    );
}

/// The radix-`r` DFT of butterfly `i` (the `butterfly`-th its thread holds)
/// in registers, then a convolution's turn, a register fault's injection and,
/// where the transform ends, its output checksums.
#[cube]
#[allow(clippy::too_many_arguments)]
fn transform_butterfly<F: Float>(
    tables: &StageTables<F>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    regs: &mut Registers<F>,
    inject_here: bool,
    signal: usize,
    i: usize,
    #[comptime] at: (usize, Pass),
) {
    let (butterfly, pass) = at;
    let cfg = comptime![pass.cfg.clone()];
    let r = comptime![pass.r];
    let at_slot = comptime![butterfly * r];
    small_dft::<F>(&mut regs.re, &mut regs.im, at_slot, 1usize, r, pass.run.round.inverse);
    if comptime![pass.turn] {
        turn_to_inverse::<F>(
            &mut regs.re,
            &mut regs.im,
            &tables.factors,
            &mut tile_memory.re,
            &mut tile_memory.im,
            signal,
            i,
            at_slot,
            r,
            cfg.clone(),
        );
    }
    if comptime![injects_at(&cfg, FaultSite::Register, pass.executed)] {
        flip_register::<F>(
            &mut regs.re,
            &mut regs.im,
            &check.inject,
            &mut check.sums,
            inject_here,
            butterfly,
            comptime![pass.per_thread * pass.slots],
            r,
        );
    }
    if comptime![pass.transform_ends] {
        check_butterfly_outputs::<F>(
            &check.checks,
            &mut check.sums,
            i,
            &regs.re,
            &regs.im,
            at_slot,
            r,
            pass.quarter_n,
            cfg,
        );
    }
}

/// A last pass's outputs of butterfly `i` (from `at_slot`) to global memory:
/// with span `n / r`, output `t` is element `i + t·n/r`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_butterfly<F: Float, SO: Storage, NO: Size>(
    output: &mut Array<Vector<SO::Elem, NO>>,
    tables: &StageTables<F>,
    unit: TileUnit,
    i: usize,
    regs: &Registers<F>,
    #[comptime] at_slot: usize,
    #[comptime] pass: Pass,
) {
    let r = comptime![pass.r];
    #[unroll]
    for t in 0..r {
        store_slot_value::<F, SO, NO>(
            output,
            &tables.post_coarse,
            &tables.post_fine,
            &tables.factors,
            unit.at,
            unit.signal,
            i + t * comptime![pass.quarter_n],
            (regs.re[at_slot + t], regs.im[at_slot + t]),
            pass.cfg.clone(),
        );
    }
}

/// A pass's outputs, `re`/`im` of each butterfly of the thread, into the tile
/// in shared memory between barriers, where the next pass (or the store)
/// reads them; a shared fault is injected after.
#[cube]
// The comptime switches stay outer `if`s.
#[allow(clippy::too_many_arguments, clippy::collapsible_if)]
fn write_pass_to_tile<F: Float, SI: Storage, NI: Size>(
    resident: &ResidentInputs<F, SI, NI>,
    tile_memory: &mut TileMemory<F>,
    check: &mut TileChecks<F>,
    regs: &Registers<F>,
    inject_here: bool,
    unit: TileUnit,
    base: usize,
    #[comptime] pass: Pass,
) {
    let cfg = comptime![pass.cfg.clone()];
    let (r, threads, quarter_n, ragged) = comptime![(pass.r, pass.threads, pass.quarter_n, pass.ragged)];
    if !comptime![pass.from_global] {
        // In place: every read of this pass must land before any write.
        sync_cube();
    }
    if comptime![pass.from_staged && cfg.rader()] {
        keep_rader_x0::<F, SI, NI>(resident, tile_memory, unit, base, cfg.clone());
    }
    let adds_x0 = comptime![pass.adds_x0()];
    let mut x0r = F::new(0.0);
    let mut x0i = F::new(0.0);
    if comptime![adds_x0] {
        let x0 = base + slot(comptime![cfg.n - 1], cfg.padded_slots);
        x0r = tile_memory.re[x0];
        x0i = tile_memory.im[x0];
    }
    let per_thread = comptime![pass.per_thread];
    #[unroll]
    for q in 0..per_thread {
        let i = unit.thread + q * threads;
        if !ragged || i < quarter_n {
            // A turning pass writes as the inverse's first pass (span 1) would.
            let written = comptime![if pass.turn { 1usize } else { pass.span }];
            let k = i % written;
            let dst = (i - k) * r + k;
            #[unroll]
            for t in 0..r {
                let at = base + slot(dst + t * written, cfg.padded_slots);
                if comptime![adds_x0] {
                    tile_memory.re[at] = regs.re[q * r + t] + x0r;
                    tile_memory.im[at] = regs.im[q * r + t] + x0i;
                } else {
                    tile_memory.re[at] = regs.re[q * r + t];
                    tile_memory.im[at] = regs.im[q * r + t];
                }
            }
        }
    }
    sync_cube();
    // Between passes only: the tile the last pass leaves for the store is
    // past the checksums (docs/abft.md).
    if comptime![injects_at(&cfg, FaultSite::Shared, pass.executed) && !pass.transform_ends] {
        if inject_here {
            flip_shared::<F>(
                &mut tile_memory.re,
                &mut tile_memory.im,
                &check.inject,
                &mut check.sums,
                cfg,
            );
        }
    }
}

/// Rader's x[0], which the turn and the last pass add, into the slot after
/// the convolution's, before the staged tile is refilled after this pass.
#[cube]
fn keep_rader_x0<F: Float, SI: Storage, NI: Size>(
    resident: &ResidentInputs<F, SI, NI>,
    tile_memory: &mut TileMemory<F>,
    unit: TileUnit,
    base: usize,
    #[comptime] cfg: StageConfig,
) {
    if unit.thread == 0 {
        let x0 = resident.staged[unit.signal * comptime![cfg.load_len()]];
        let at = base + slot(comptime![cfg.n - 1], cfg.padded_slots);
        tile_memory.re[at] = load_value::<F, SI>(x0[0]);
        tile_memory.im[at] = load_value::<F, SI>(x0[1]);
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

#[cfg(test)]
mod tests {
    use super::super::config::{Convolution, InputForm, OutputForm};
    use super::super::rules::whole_signal_stage;
    use super::*;

    fn stage(n: usize, convolution: Option<Convolution>, max_radix: usize, threads: usize) -> StageConfig {
        let mut cfg = whole_signal_stage(n, convolution, (InputForm::Complex, OutputForm::Complex), max_radix, 0);
        cfg.threads_per_signal = threads;
        cfg
    }

    /// Every pass a tile runs, from the first on, as [`stockham_passes`] walks them.
    fn walk(cfg: &StageConfig) -> Vec<Pass> {
        let mut run = Some(PassRun {
            pass: 0,
            until: cfg.radices.len(),
            round: Round::first(cfg),
        });
        let mut passes = Vec::new();
        while let Some(at) = run {
            let pass = Pass::new(cfg, at);
            run = pass.following();
            passes.push(pass);
        }
        passes
    }

    #[test]
    fn plain_passes_span_what_came_before() {
        let cfg = stage(48, None, 4, 5);
        let passes = walk(&cfg);
        assert_eq!(passes.len(), cfg.radices.len());
        let mut span = 1;
        for (p, pass) in passes.iter().enumerate() {
            assert_eq!((pass.run.pass, pass.r, pass.span), (p, cfg.radices[p], span));
            assert_eq!(pass.quarter_n * pass.r, 48);
            assert_eq!(pass.per_thread, pass.quarter_n.div_ceil(5));
            assert_eq!(pass.ragged, pass.quarter_n % 5 != 0);
            assert_eq!(pass.last, p + 1 == passes.len());
            assert_eq!(pass.transform_ends, pass.last);
            assert!(!pass.turn && !pass.untangle);
            span *= pass.r;
        }
        assert_eq!(span, 48);
    }

    #[test]
    fn a_run_stops_at_until() {
        let cfg = stage(64, None, 4, 4);
        let first = Pass::new(
            &cfg,
            PassRun {
                pass: 0,
                until: 1,
                round: Round::first(&cfg),
            },
        );
        assert_eq!(first.following(), None);
        let second = Pass::new(
            &cfg,
            PassRun {
                pass: 1,
                until: 3,
                round: Round::first(&cfg),
            },
        );
        assert_eq!(second.following().map(|run| run.pass), Some(2));
    }

    /// A convolution's forward passes turn at the last into the inverse's,
    /// reversed, whose first pass the turn already ran.
    #[test]
    fn a_convolution_turns_into_its_inverse() {
        for (n, convolution) in [
            (7, Convolution::Rader),
            (13, Convolution::Rader),
            (5, Convolution::Bluestein(9)),
        ] {
            let cfg = stage(n, Some(convolution), 4, 2);
            let passes = walk(&cfg);
            let k = cfg.radices.len();
            assert_eq!(
                passes.len(),
                2 * k - 1,
                "{convolution:?} of {n}: radices {:?}",
                cfg.radices
            );
            let turns: Vec<usize> = (0..passes.len()).filter(|&p| passes[p].turn).collect();
            assert_eq!(turns, [k - 1]);
            for (p, pass) in passes.iter().enumerate() {
                assert_eq!(pass.run.round.inverse, p >= k, "pass {p}");
                assert_eq!(pass.transform_ends, p + 1 == passes.len(), "pass {p}");
            }
            let chirp = matches!(convolution, Convolution::Bluestein(_)).then_some(n);
            assert_eq!(passes[0].run.round.chirp, chirp);
            // The inverse's passes run its radices last to first.
            let inverse: Vec<usize> = passes[k..].iter().map(|pass| pass.r).collect();
            let mut expected: Vec<usize> = cfg.radices[..k - 1].to_vec();
            expected.reverse();
            assert_eq!(inverse, expected);
        }
    }
}
