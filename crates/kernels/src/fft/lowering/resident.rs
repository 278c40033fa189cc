//! Resident cubes: a stage whose cubes stay on the device walking tiles, each
//! staging its next tile's input while it transforms the current one
//! ([`TilePrefetch`]), and the plans of their passes.

use super::super::factor::{
    butterfly_split, default_max_radix, is_smooth, radices_within, rounds_per_thread, smooth_plans, thread_rounds_on,
    threads_per_signal,
};
use super::super::options::TilePrefetch;
use super::super::stage::{stages_ahead, StageConfig, StageLayout, TileFill, HELD_TWIDDLE_THREADS, MIN_DIRECT_RUN};
use super::super::window::Window;
use super::Lowering;

/// The smallest tile (working shared memory of one cube) whose stage of whole
/// rows runs on resident cubes that stage the next tile's input asynchronously,
/// 16 bytes per copy (odd rows 8) ([`TilePrefetch::Auto`]). Such a cube shares
/// its SM with at most three others, which cannot hide its load; smaller tiles
/// lose more to the staging than they gain. Column tiles stay one tile per
/// cube: they ran slower resident
/// (benches/results/2026-11-25_resident_cubes_h100.md).
const RESIDENT_TILE_BYTES: usize = 48 * 1024;

/// The most threads a resident cube takes when a wider radix allows (see
/// `Lowering::with_prefetch`): more threads spill registers in the resident
/// loop.
const RESIDENT_THREADS: usize = 512;

/// Largest product of an odd radix and a power of two in a resident stage's
/// passes, where it saves a pass (C2C 6144 = 16·16·24, not 3·8·16·16;
/// benches/results/2026-11-26_staged_pass_order_h100.md).
const RESIDENT_COMPOSITE: usize = 32;

/// Rounds of butterflies beyond one a pass that a resident plan on at most 8 or
/// 12 warps may take a thread ([`plan_within`]): plans within this bound beat
/// the wider cubes they replace, plans of more rounds lost
/// (benches/results/2026-11-27_eight_warp_plans_h100.md).
const RESIDENT_EXTRA_ROUNDS: usize = 2;

/// The most threads of a cube that ptxas lets take 168 registers each (12
/// warps; 13 to 16 get 128), where a resident stage on more moves if its plan
/// loops ([`plan_on_fewer_warps`]); plans of one round a pass keep their
/// threads, as moving them did not pay
/// (benches/results/2026-11-27_eight_warp_plans_h100.md).
const CAPPED_REGISTER_THREADS: usize = 384;

/// Output pairs a thread computes of a butterfly that a resident stage's first
/// pass splits ([`Lowering::split_staged_first_pass`]): the fastest count tried
/// on C2C 141 = 47·3 (benches/results/2026-11-26_resident_split_h100.md).
const RESIDENT_BUTTERFLY_PAIRS: usize = 6;

/// Threads an SM holds at once on the GPUs we tune for (Ampere, Hopper): a
/// bound on the resident cubes of a prefetching stage.
const THREADS_PER_MULTIPROCESSOR: usize = 2048;

/// For a resident stage of a 7-smooth `len` whose cube of `signals` signals
/// runs the passes `radices` on `threads` threads each, more than 8 warps in
/// all, a plan of as many passes on fewer warps, and its threads a signal, as
/// ptxas gives a cube fewer registers a thread the more warps it has. The cube
/// moves to 8 warps ([`HELD_TWIDDLE_THREADS`]) where [`plan_within`] finds a
/// plan there, else from more than 12 warps to 12 ([`CAPPED_REGISTER_THREADS`])
/// where its own plan already takes a thread more than one round in some pass.
fn plan_on_fewer_warps(len: usize, radices: &[usize], threads: usize, signals: usize) -> Option<(Vec<usize>, usize)> {
    let cube_threads = threads * signals;
    let loops = rounds_per_thread(len, radices, threads) > radices.len();
    [(HELD_TWIDDLE_THREADS, true), (CAPPED_REGISTER_THREADS, loops)]
        .into_iter()
        .filter(|&(fewer, applies)| applies && cube_threads > fewer)
        .find_map(|(fewer, _)| plan_within(len, radices.len(), signals, fewer))
}

/// A plan of `passes` passes over a 7-smooth `len` on at most `cube_threads`
/// threads a cube of `signals` signals, and its threads a signal. It takes
/// the fewest rounds of butterflies a thread, at most
/// [`RESIDENT_EXTRA_ROUNDS`] more than one a pass; then the fewest
/// thread-rounds, then the smallest largest radix. Odd composites up to
/// [`RESIDENT_COMPOSITE`] include 27 and 25, which the fewest-pass factoring
/// never forms.
fn plan_within(len: usize, passes: usize, signals: usize, cube_threads: usize) -> Option<(Vec<usize>, usize)> {
    let max_threads = cube_threads / signals;
    if max_threads == 0 {
        return None;
    }
    let rounds = |plan: &[usize], threads: usize| rounds_per_thread(len, plan, threads);
    smooth_plans(len, passes, 2 * default_max_radix(len), RESIDENT_COMPOSITE)
        .into_iter()
        .map(|plan| {
            let fewest = rounds(&plan, max_threads);
            let threads = (1..=max_threads)
                .find(|&threads| rounds(&plan, threads) == fewest)
                .expect("max_threads takes the fewest rounds");
            let key = (
                fewest,
                thread_rounds_on(len, &plan, threads),
                plan.iter().max().copied(),
            );
            (key, plan, threads)
        })
        .filter(|((rounds, _, _), _, _)| *rounds <= passes + RESIDENT_EXTRA_ROUNDS)
        .min_by_key(|(key, _, _)| *key)
        .map(|(_, plan, threads)| (plan, threads))
}

impl Lowering {
    /// Makes the stage's cubes resident and prefetching ([`TilePrefetch`])
    /// where the options and the device allow; returns the cubes to launch.
    pub(super) fn with_prefetch(&self, mut cfg: StageConfig, layout: &StageLayout) -> (StageConfig, Option<usize>) {
        // Rows read whole from contiguous signals; evenly placed ones stage
        // two pairs (16 bytes) per copy, the launch checking the buffer's
        // alignment, odd ones one pair.
        let extents = [layout.na, layout.nb, layout.nc];
        let whole_rows = !cfg.load_signals_fastest
            && cfg.load_fold.is_none()
            && matches!(cfg.load, Window::Prefix(len) if len >= cfg.n)
            && layout.input[3] == 1;
        let paired_rows = whole_rows
            && cfg.n.is_multiple_of(2)
            && (0..3).all(|d| extents[d] == 1 || layout.input[d].is_multiple_of(2));
        let tile_bytes = 8 * cfg.signals_per_cube * cfg.smem_stride;
        let wanted = match self.options.prefetch {
            TilePrefetch::Always => true,
            TilePrefetch::Never => false,
            TilePrefetch::Auto => self.async_copies && whole_rows && tile_bytes >= RESIDENT_TILE_BYTES,
        };
        // A signal's working tile and its staged input; fewer signals per
        // cube where they would not fit.
        let signal_bytes = 8 * (cfg.smem_stride + cfg.load_len());
        let signals = cfg.signals_per_cube.min(self.device_shared / signal_bytes);
        if !(wanted && stages_ahead(&cfg) && signals > 0) {
            return (cfg, None);
        }
        cfg.signals_per_cube = signals;
        // The resident loop keeps more values live across the passes: with
        // more than RESIDENT_THREADS threads (at most 80 registers each) the
        // passes spill, so a wider radix halves the threads where it can.
        // Composites up to RESIDENT_COMPOSITE take the plan where they save
        // a pass within those threads, the default cap before the wider. A
        // convolution keeps its own plan.
        if self.options.max_radix.is_none() && cfg.convolution.is_none() {
            let len = cfg.pass_len();
            let cap = default_max_radix(len);
            let wider = [cap, 2 * cap]
                .into_iter()
                .filter_map(|max_radix| {
                    let plan = radices_within(len, max_radix, RESIDENT_COMPOSITE)?;
                    let threads = threads_per_signal(len, &plan, cfg.butterfly_pairs);
                    (threads * cfg.signals_per_cube <= RESIDENT_THREADS).then_some((plan, threads))
                })
                .min_by_key(|(plan, _)| plan.len());
            if let Some((plan, threads)) = wider {
                if plan.len() < cfg.radices.len() || cfg.threads_per_cube() > RESIDENT_THREADS {
                    cfg.radices = plan;
                    cfg.threads_per_signal = threads;
                }
            }
            if let Some((plan, threads)) =
                plan_on_fewer_warps(len, &cfg.radices, cfg.threads_per_signal, cfg.signals_per_cube)
            {
                cfg.radices = plan;
                cfg.threads_per_signal = threads;
            }
        }
        self.split_staged_first_pass(&mut cfg);
        cfg.prefetch = Some(if self.async_copies {
            TileFill::AsyncCopies {
                pairs: if paired_rows { 2 } else { 1 },
            }
        } else {
            TileFill::Loads
        });
        // Overestimating costs nothing: surplus cubes wait and walk fewer tiles.
        let per_multiprocessor = (self.device_shared / (cfg.signals_per_cube * signal_bytes))
            .min(THREADS_PER_MULTIPROCESSOR / cfg.threads_per_cube())
            .max(1);
        let cubes = self
            .options
            .resident_cubes
            .or(self.multiprocessors.map(|sms| sms * per_multiprocessor));
        (cfg, cubes)
    }

    /// Splits the butterflies of a resident stage's first pass
    /// ([`RESIDENT_BUTTERFLY_PAIRS`]) where it is of a prime radix above 7 with
    /// fewer than [`MIN_DIRECT_RUN`] butterflies a signal: unsplit, that pass
    /// read global memory directly (a pass of such a radix through shared
    /// memory would hold all its outputs across the barrier); a resident pass
    /// reads the staged tile, where a split thread reading the whole butterfly
    /// costs shared loads only. The cube keeps its signals, even past
    /// [`RESIDENT_THREADS`], as fewer signals a cube ran slower
    /// (benches/results/2026-11-26_resident_split_h100.md), but no more than
    /// the device's threads a cube hold. A caller's `butterfly_pairs` holds
    /// (0: unsplit).
    pub(super) fn split_staged_first_pass(&self, cfg: &mut StageConfig) {
        let len = cfg.pass_len();
        let Some(&r) = cfg.radices.first() else {
            return;
        };
        let pairs = self.options.butterfly_pairs.unwrap_or(RESIDENT_BUTTERFLY_PAIRS);
        let few = len / r < MIN_DIRECT_RUN;
        if cfg.convolution.is_some() || is_smooth(r) || !few || butterfly_split(r, pairs) == 1 {
            return;
        }
        let threads = threads_per_signal(len, &cfg.radices, pairs);
        if threads > self.max_threads {
            return;
        }
        cfg.butterfly_pairs = pairs;
        cfg.threads_per_signal = threads;
        cfg.signals_per_cube = cfg.signals_per_cube.min(self.max_threads / threads);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident stages on more than 8 warps move to a plan of as many passes
    /// on at most 8 where it takes at most two extra rounds: 27 = 3·9 as one
    /// radix where three 3s would not fit three passes on 256 threads, and a
    /// cube of two signals gets half the threads each.
    #[test]
    pub(super) fn resident_plans_move_to_eight_warps_within_two_extra_rounds() {
        let plan = |len, signals| plan_within(len, 3, signals, HELD_TWIDDLE_THREADS);
        assert_eq!(plan(6912, 1), Some((vec![27, 16, 16], 256)));
        assert_eq!(plan(6144, 1), Some((vec![24, 16, 16], 256)));
        assert_eq!(plan(6720, 1), Some((vec![28, 16, 15], 240)));
        assert_eq!(plan(1536, 2), Some((vec![16, 16, 6], 128)));
        // Three passes of two rounds each (20·20·20 on 200 threads), or a
        // prime factor above 7: no plan.
        assert_eq!(plan(8000, 1), None);
        assert_eq!(plan(11 * 512, 1), None);
        assert_eq!(plan(6144, 512), None);
        for (len, signals) in [(6912, 1), (6144, 1), (6720, 1), (1536, 2)] {
            let (radices, threads) = plan(len, signals).unwrap();
            assert_eq!(radices.iter().product::<usize>(), len);
            assert!(threads * signals <= HELD_TWIDDLE_THREADS);
            assert!(radices.iter().all(|&r| r <= RESIDENT_COMPOSITE));
        }
    }

    /// A cube of more than 12 warps whose plan loops moves to 12 when no
    /// plan fits 8; one whose every pass is one round stays.
    #[test]
    pub(super) fn resident_cubes_past_twelve_warps_move_only_where_their_plan_loops() {
        let fewer = |len, radices: &[usize], threads| plan_on_fewer_warps(len, radices, threads, 1);
        assert_eq!(fewer(6912, &[12, 24, 24], 288), Some((vec![27, 16, 16], 256)));
        assert_eq!(fewer(10752, &[16, 28, 24], 448), Some((vec![32, 21, 16], 336)));
        assert_eq!(fewer(10368, &[18, 24, 24], 432), Some((vec![32, 18, 18], 324)));
        assert_eq!(fewer(7776, &[18, 18, 24], 432), None);
        assert_eq!(fewer(7168, &[16, 16, 28], 256), None);
        assert_eq!(fewer(12288, &[12, 32, 32], 384), None);
    }
}
