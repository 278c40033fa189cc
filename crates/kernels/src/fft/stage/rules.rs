//! What a stage decides from its configuration before it compiles: which
//! paths it takes (direct loads and stores, staged tiles, unit walks, split
//! passes, held twiddles), and the whole-signal stage every plan starts from.

use super::config::{smem_stride_for, Convolution, InputForm, OutputForm, Round, StageConfig};
use super::packed::untangled_units;
use crate::fft::factor::{butterfly_split, radices, rounds_per_thread, threads_per_signal};
use crate::fft::window::Window;

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

/// Whether a packed Hermitian input is folded in shared memory after a staged
/// load; a first pass that reads global memory folds the bins as it reads them.
pub(crate) fn folds_in_shared(cfg: &StageConfig) -> bool {
    cfg.input == InputForm::HermitianPacked && !loads_directly(cfg)
}

/// Whether an untangling (R2C) stage pairs bins `k` and `n - k` in the last
/// pass's registers instead of through shared memory after it: each thread
/// takes a butterfly and its mirror ([`untangled_units`]). Only where every
/// thread gets a pair and two butterflies hold no more values than the plan's
/// largest radix (R2C 1000): elsewhere idle threads or doubled registers made
/// it slower (benches/results/2026-11-25_fewest_passes_h100.md).
pub(super) fn untangles_in_registers(cfg: &StageConfig) -> bool {
    let Some(&r) = cfg.radices.last() else {
        return false;
    };
    let largest = cfg.radices.iter().copied().max().unwrap_or(r);
    untangled_units(cfg.n / r) >= cfg.threads_per_signal && 2 * r <= largest
}

/// Whether a stage's convolution, if any, can read a staged tile: Rader's,
/// whose unsplit first pass gathers its slots from the staged input through the
/// factors table; not Bluestein's, whose chirp runs past the input. Only
/// `TilePrefetch::Always` takes Rader's rows there: most Rader lengths ran
/// slower resident (benches/results/2026-11-26_resident_split_h100.md).
pub(super) fn stages_convolution(cfg: &StageConfig) -> bool {
    match cfg.convolution {
        None => true,
        // x[0] lands in its slot as the first pass writes, after the turn of
        // a one-pass plan would have read it.
        Some(Convolution::Rader) => cfg.radices.len() > 1 && pass_split(cfg, &Round::first(cfg), 0) == 1,
        Some(Convolution::Bluestein(_)) => false,
    }
}

/// Threads each butterfly of pass `pass` of `round` is split over
/// ([`split_first_pass`]): those of a first pass of a large odd radix
/// ([`butterfly_split`]), unless the pass applies Bluestein's chirp, turns a
/// convolution or untangles its store; 1 otherwise.
pub(crate) fn pass_split(cfg: &StageConfig, round: &Round, pass: usize) -> usize {
    if pass >= cfg.radices.len() {
        return 1;
    }
    let (r, _) = round.radix_and_span(&cfg.radices, pass);
    let last = pass + 1 == cfg.radices.len();
    let untangles = last && stores_directly(cfg) && cfg.output == OutputForm::Untangled;
    if pass == 0 && round.chirp.is_none() && !(last && round.turn) && !untangles {
        butterfly_split(r, cfg.butterfly_pairs)
    } else {
        1
    }
}

/// The most twiddles (complex values, two registers each) a resident cube's
/// thread holds.
const MAX_HELD_TWIDDLES: usize = 8;

/// The most threads of a resident cube whose threads hold their twiddles. ptxas
/// gives a cube of up to 8 warps as many as 255 registers a thread, but caps
/// one of 9 to 12 warps at 168 (some SM sub-partition holds 3 of them), where
/// held twiddles spill (benches/results/2026-11-26_register_cap_h100.md).
pub(crate) const HELD_TWIDDLE_THREADS: usize = 256;

/// Whether a resident cube's threads hold their passes' twiddles in
/// registers ([`held_twiddles`]): a cube of at most [`HELD_TWIDDLE_THREADS`]
/// threads, a transform without a convolution (one round of passes) and
/// without an untangling last pass, at most [`MAX_HELD_TWIDDLES`] a thread.
pub(crate) fn holds_twiddles(cfg: &StageConfig) -> bool {
    let passes = cfg.radices.len();
    cfg.prefetch.is_some()
        && cfg.threads_per_cube() <= HELD_TWIDDLE_THREADS
        && cfg.convolution.is_none()
        && cfg.output != OutputForm::Untangled
        && held_twiddle_offset(cfg, passes) <= MAX_HELD_TWIDDLES
}

/// Twiddles a thread holds for the passes before `pass`: one for each of its
/// butterflies in every pass after the first (whose span is 1).
pub(crate) fn held_twiddle_offset(cfg: &StageConfig, pass: usize) -> usize {
    let later = &cfg.radices[1.min(pass)..pass];
    rounds_per_thread(cfg.pass_len(), later, cfg.threads_per_signal)
}

/// Whether a stage's tiles take their coordinates without a runtime division
/// when they form one row ([`StageConfig::one_tile_row`]): resident cubes,
/// which find them for every tile they walk, and one-tile cubes whose tile goes
/// through shared memory both ways. Passes that read or write global memory
/// directly gain nothing from it, and a last pass that stores from registers
/// lost with it (benches/results/2026-11-26_tile_coordinates_h100.md).
pub(crate) fn coordinates_pay(cfg: &StageConfig) -> bool {
    cfg.prefetch.is_some() || !(loads_directly(cfg) || stores_directly(cfg))
}

/// Complex values a signal's tile holds: its input, the passes' sequence, and
/// Rader's `x[0]` and `X[0]` beside the convolution.
pub(crate) fn tile_slots(n: usize, input: InputForm, convolution: Option<Convolution>) -> usize {
    let extra = if convolution == Some(Convolution::Rader) { 2 } else { 0 };
    input.load_len(n).max(Convolution::pass_len(convolution, n) + extra)
}

/// A stage that transforms whole signals of length `n` (through a
/// convolution's length when given) in one cube, one signal at a time, rows
/// walked element first, whole sequences in and out: callers narrow it. Its
/// first pass splits its butterflies by `butterfly_pairs` where
/// [`splits_first_pass`] allows (0: never).
pub(crate) fn whole_signal_stage(
    n: usize,
    convolution: Option<Convolution>,
    forms: (InputForm, OutputForm),
    max_radix: usize,
    butterfly_pairs: usize,
) -> StageConfig {
    let pass_len = Convolution::pass_len(convolution, n);
    let radix_list = radices(pass_len, max_radix).expect("pass lengths have a radix plan");
    let mut cfg = StageConfig {
        n,
        radices: radix_list,
        convolution,
        threads_per_signal: 1,
        signals_per_cube: 1,
        butterfly_pairs,
        inverse: false,
        input: forms.0,
        output: forms.1,
        load: Window::Prefix(2 * n + 1),
        store: Window::Prefix(2 * n + 1),
        load_signals_fastest: false,
        store_signals_fastest: false,
        smem_stride: smem_stride_for(tile_slots(n, forms.0, convolution)),
        padded_slots: true,
        scale_bits: 1f32.to_bits(),
        post_twiddle: None,
        prune: false,
        load_fold: None,
        store_fold: None,
        load_factor: None,
        store_factor: None,
        load_shared: false,
        store_shared: false,
        // Set once the layout is known (`StageConfig::with_layout`, `push_stage`).
        vector_input: false,
        vector_output: false,
        unit_input_axis: false,
        unit_output_axis: false,
        one_tile_row: false,
        prefetch: None,
        checks: None,
    };
    if !splits_first_pass(&cfg) {
        cfg.butterfly_pairs = 0;
    }
    cfg.threads_per_signal = threads_per_signal(pass_len, &cfg.radices, cfg.butterfly_pairs);
    cfg
}

#[cfg(test)]
mod tests {
    use super::super::config::TileFill;
    use super::*;

    /// Resident cubes of up to 8 warps hold one twiddle per butterfly of
    /// each pass after the first; larger cubes, which ptxas holds to 168
    /// registers a thread, and one-tile cubes read the table.
    #[test]
    fn resident_threads_hold_twiddles_only_where_registers_allow() {
        use crate::fft::factor::BUTTERFLY_PAIRS;
        let forms = (InputForm::Complex, OutputForm::Complex);
        let resident = |n: usize, radices: &[usize], threads: usize| {
            let mut cfg = whole_signal_stage(n, None, forms, 16, BUTTERFLY_PAIRS);
            cfg.radices = radices.to_vec();
            cfg.threads_per_signal = threads;
            cfg.signals_per_cube = 1;
            cfg.prefetch = Some(TileFill::AsyncCopies { pairs: 2 });
            cfg
        };
        // 7168 / 16 = 448 butterflies on 256 threads: two each; 7168 / 28 = 256: one.
        let mut cfg = resident(7168, &[16, 16, 28], 256);
        assert!(holds_twiddles(&cfg));
        assert_eq!(held_twiddle_offset(&cfg, 2), 2);
        assert_eq!(held_twiddle_offset(&cfg, 3), 3);
        cfg.prefetch = None;
        assert!(!holds_twiddles(&cfg));
        assert!(!holds_twiddles(&resident(6912, &[12, 24, 24], 288)));
        assert!(!holds_twiddles(&resident(12288, &[12, 32, 32], 384)));
    }
}
