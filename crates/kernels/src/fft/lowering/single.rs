//! Whole signals in one cube: the stage configuration of rows and columns,
//! its signals per cube and shared layout, real signals paired as twins, and
//! the stage the fused spectral kernel embeds.

use super::super::algorithm::bluestein::bluestein_length;
use super::super::algorithm::rader::is_rader_prime;
use super::super::banks::{shared_layout, Lanes};
use super::super::factor::{
    balanced_two_passes, default_max_radix, first_pass_in_whole_rounds, has_radix_plan, is_smooth,
    largest_first_pass_last,
};
use super::super::fault::checksum_table;
use super::super::options::{OddReal, PrimeAlgorithm, SharedLayout, UnitStrides};
use super::super::plan::AxisStep;
use super::super::stage::{
    coordinates_pay, tile_slots, whole_signal_stage, Convolution, InputForm, OutputForm, StageConfig, StageLayout,
};
use super::tables::{coarse_twiddles, convolution_factors, twiddle_table};
use super::{Batch, Buf, Kernel, Lowering, Sink, Source, Transform};

/// Threads a row-mode cube aims for.
const ROW_THREADS: usize = 256;

/// Signals a column-mode tile wants side by side, so that each row of the tile
/// is at least 64 contiguous bytes. Wider tiles
/// (`DeviceOptions::column_signals`) won on some of FNO's column passes and
/// lost on others, so 8 stays.
pub(super) const COLUMN_SIGNALS: usize = 8;

/// Threads a cube of Rader's rows aims for (Bluestein's, unmeasured, keep
/// [`ROW_THREADS`]). Its two transforms keep more values live than one, so
/// larger cubes cost registers and occupancy; most Rader lengths ran fastest
/// in cubes of 128, and measured planning tries 64 and 256 too
/// (benches/results/2026-11-26_measured_planning_h100.md).
pub(crate) const CONVOLUTION_ROW_THREADS: usize = 128;

/// Largest radix of Rader's two-pass rows ([`balanced_two_passes`]): radices up
/// to 24 beat three-pass plans, wider ones lost on the real transforms
/// (benches/results/2026-11-26_rader_two_passes_h100.md).
const CONVOLUTION_COMPOSITE: usize = 24;

/// The convolution a length runs as in one cube: none for lengths with a
/// radix plan, Rader's for larger primes with a 7-smooth predecessor (unless
/// asked otherwise), Bluestein's for the others.
pub(super) fn convolution_for(n: usize, primes: PrimeAlgorithm) -> Option<Convolution> {
    if has_radix_plan(n) {
        None
    } else if primes == PrimeAlgorithm::Rader && is_rader_prime(n) {
        Some(Convolution::Rader)
    } else {
        Some(Convolution::Bluestein(bluestein_length(n)))
    }
}

/// An axis step as one stage over tiles that a caller's kernel holds whole in
/// shared memory between steps of its own (the fused spectral convolution):
/// one signal per cube until the caller sets its tile, no global loads or
/// stores chosen. Cheap: the tables come apart ([`shared_stage_tables`]).
/// A caller that fills the tile itself places element `k` at
/// `stage::input_slot` (Rader's algorithm permutes it).
pub(crate) fn shared_stage(step: &AxisStep) -> StageConfig {
    let t = Transform::of(step);
    let convolution = convolution_for(t.n, PrimeAlgorithm::default());
    let mut cfg = whole_signal_stage(
        t.n,
        convolution,
        (t.input, t.output),
        default_max_radix(Convolution::pass_len(convolution, t.n)),
        0,
    );
    cfg.inverse = t.inverse;
    cfg.load = step.load;
    cfg.store = step.store;
    cfg.scale_bits = (step.scale as f32).to_bits();
    cfg
}

/// The twiddle table and the factors (Bluestein's; one zero when there are
/// none, as every kernel binds the array) of a [`shared_stage`].
pub(crate) fn shared_stage_tables(cfg: &StageConfig) -> (Vec<f32>, Vec<f32>) {
    let table_len = cfg.pass_len() * cfg.twiddle_table_step();
    let factors = convolution_factors(cfg.n, cfg.inverse, cfg.convolution);
    (twiddle_table(table_len, table_len.max(1)), factors)
}

impl Lowering {
    /// A stage of whole signals over rows or columns, its first pass split by
    /// `butterfly_pairs` where it may ([`whole_signal_stage`]).
    pub(super) fn single_stage_config(
        &self,
        n: usize,
        convolution: Option<Convolution>,
        forms: (InputForm, OutputForm),
        column: bool,
        signals_hint: usize,
        butterfly_pairs: usize,
    ) -> StageConfig {
        let mut cfg = whole_signal_stage(
            n,
            convolution,
            forms,
            self.max_radix(Convolution::pass_len(convolution, n)),
            butterfly_pairs,
        );
        let free_plan = self.options.max_radix.is_none();
        if convolution == Some(Convolution::Rader) && !column && free_plan && cfg.radices.len() > 2 {
            // Rader's rows in two passes (the most even split, smaller radix
            // first; forward real twins larger first): three-pass plans are
            // bound by their instructions. A caller's radix cap keeps its plan.
            if let Some([small, large]) = balanced_two_passes(cfg.pass_len(), CONVOLUTION_COMPOSITE) {
                cfg.radices = if forms.0 == InputForm::RealTwins {
                    vec![large, small]
                } else {
                    vec![small, large]
                };
                // Measured unsplit: an odd first radix from 17 on would split.
                cfg.butterfly_pairs = 0;
            }
        }
        if convolution.is_some() && !column {
            // A convolution's row passes run one butterfly of their smallest
            // radix per thread: they keep many values live, and more, lighter
            // threads hide them better. Column tiles keep the fewest threads.
            let smallest = cfg.radices.iter().copied().min().unwrap_or(1);
            cfg.threads_per_signal = (cfg.pass_len() / smallest).clamp(1, self.max_threads);
        }
        cfg.load_signals_fastest = column;
        cfg.store_signals_fastest = column;
        cfg.signals_per_cube = self.signals_per_cube(&cfg, column, signals_hint);
        cfg.prune = self.options.prune;
        cfg
    }

    /// Signals a cube of `cfg` transforms side by side, of `signals_hint` in
    /// a row of tiles: as many as fill [`ROW_THREADS`] threads (Rader's rows
    /// [`CONVOLUTION_ROW_THREADS`]; columns: at least the fewest column
    /// signals), as far as shared memory and the device's threads allow.
    pub(super) fn signals_per_cube(&self, cfg: &StageConfig, column: bool, signals_hint: usize) -> usize {
        let by_smem = (self.shared_limit / (8 * cfg.smem_stride)).max(1);
        let threads_per_signal = cfg.threads_per_signal;
        let wanted = if column {
            let fewest = self.options.column_signals.unwrap_or(COLUMN_SIGNALS);
            fewest.max(ROW_THREADS / threads_per_signal)
        } else if cfg.convolution == Some(Convolution::Rader) {
            let threads = self.options.convolution_row_threads.unwrap_or(CONVOLUTION_ROW_THREADS);
            (threads / threads_per_signal).max(1)
        } else {
            ROW_THREADS / threads_per_signal
        };
        let most = wanted.min(by_smem).min(self.max_threads / threads_per_signal).max(1);
        // Spread the signals of a row of tiles evenly, so that a last, nearly
        // empty tile does not cost a whole cube.
        let tiles = signals_hint.max(1).div_ceil(most);
        signals_hint.max(1).div_ceil(tiles)
    }

    /// Whether a stage of `t` takes the modelled shared layout
    /// ([`SharedLayout::Modelled`]): only stages bound by shared memory, a
    /// convolution's or passes of a prime radix above 7, which gain from it;
    /// 7-smooth lengths, near the copy bandwidth already, moved both ways
    /// (benches/results/2026-11-25_shared_layout_h100.md).
    pub(super) fn shared_bound(&self, t: &Transform, convolution: Option<Convolution>) -> bool {
        self.options.shared_layout == SharedLayout::Modelled && (convolution.is_some() || !is_smooth(t.n))
    }

    /// A column stage whose tile holds all `signals` columns of a row of tiles,
    /// if one cube can: the tile then reads and writes one contiguous block
    /// (every row whole) instead of runs of a few columns. The default radix
    /// cap is tried first, then 16, whose fewer threads per signal fit more
    /// columns (unless the caller fixed the cap)
    /// (benches/results/2026-11-25_rader_column_tiles_h100.md).
    pub(super) fn whole_row_column_stage(&self, t: &Transform, signals: usize) -> Option<StageConfig> {
        let caps = match self.options.max_radix {
            Some(cap) => vec![cap],
            None => vec![default_max_radix(t.n), 16],
        };
        caps.into_iter().find_map(|cap| {
            let mut cfg = whole_signal_stage(t.n, None, (t.input, t.output), cap, 0);
            let fits = signals * cfg.threads_per_signal <= self.max_threads
                && 8 * signals * cfg.smem_stride <= self.shared_limit;
            fits.then(|| {
                cfg.signals_per_cube = signals;
                cfg.load_signals_fastest = true;
                cfg.store_signals_fastest = true;
                cfg.prune = self.options.prune;
                cfg
            })
        })
    }

    pub(super) fn push_stage(
        &mut self,
        cfg: StageConfig,
        layout: StageLayout,
        src: (Buf, usize),
        dst: (Buf, usize),
        factors: &[f32],
    ) {
        let (mut cfg, resident_cubes) = self.with_prefetch(
            cfg.with_layout(&layout, self.options.unit_strides == UnitStrides::Compiled),
            &layout,
        );
        // Rows whose first pass reads global memory start with a pass in whole
        // rounds; staged and column tiles run a larger first pass last instead.
        if cfg.convolution.is_none() {
            let staged = cfg.prefetch.is_some() || cfg.load_signals_fastest;
            cfg.radices = if staged {
                largest_first_pass_last(cfg.pass_len(), &cfg.radices)
            } else {
                first_pass_in_whole_rounds(cfg.pass_len(), &cfg.radices, cfg.threads_per_signal)
            };
        }
        cfg.one_tile_row = layout.na == 1 && layout.nb == 1 && coordinates_pay(&cfg);
        let table_len = cfg.pass_len() * cfg.twiddle_table_step();
        let twiddles = twiddle_table(table_len, table_len.max(1));
        let post = cfg
            .post_twiddle
            .map(|pt| [coarse_twiddles(pt), twiddle_table(pt.total, pt.fine_len)]);
        // Kernels bind every array argument: an unused factors table is one zero.
        let factors = if factors.is_empty() {
            vec![0.0, 0.0]
        } else {
            factors.to_vec()
        };
        cfg.checks = self.checks;
        let checks = match cfg.checks {
            Some(_) => {
                // The verdicts add up each unit's four sums in the tile's shared memory.
                assert!(
                    2 * cfg.threads_per_cube() <= cfg.signals_per_cube * cfg.smem_stride,
                    "a checked stage's tile holds its units' sums"
                );
                checksum_table(&cfg, &factors)
            }
            None => vec![0.0],
        };
        let kernel = Kernel::Stage {
            cfg,
            layout,
            twiddles,
            post,
            factors,
            resident_cubes,
            checks,
        };
        self.push(kernel, src, dst);
    }

    /// One launch: every signal whole in one cube.
    pub(super) fn single(
        &mut self,
        t: &Transform,
        convolution: Option<Convolution>,
        batch: Batch,
        src: Source,
        dst: Sink,
    ) {
        let column = batch.column();
        let signals = if column { batch.inner } else { batch.outer };
        let t = &self.twinned(t, convolution, signals);
        let slots = signals.div_ceil(t.input.signals_per_slot());
        let whole_row = match convolution {
            None if column => self.whole_row_column_stage(t, slots),
            _ => None,
        };
        let whole_rows = whole_row.is_some();
        // Only rows split their first pass's butterflies: column tiles read
        // global memory directly, where a split multiplies the loads.
        let butterfly_pairs = if column { 0 } else { self.butterfly_pairs() };
        let mut cfg = whole_row.unwrap_or_else(|| {
            self.single_stage_config(t.n, convolution, (t.input, t.output), column, slots, butterfly_pairs)
        });
        cfg.inverse = t.inverse;
        cfg.load = src.window;
        cfg.store = dst.window;
        cfg.scale_bits = dst.scale.to_bits();
        if !whole_rows && self.shared_bound(t, convolution) {
            let tile = tile_slots(t.n, t.input, convolution);
            cfg = shared_layout(&cfg, tile, Lanes::PowerOfTwo, |c| {
                self.signals_per_cube(c, column, slots)
            });
        }
        let layout = if column {
            StageLayout {
                na: 1,
                nb: batch.outer,
                nc: batch.inner,
                input: [0, src.stored * batch.inner, 1, batch.inner],
                output: [0, dst.stored * batch.inner, 1, batch.inner],
            }
        } else {
            StageLayout {
                na: 1,
                nb: 1,
                nc: batch.outer,
                input: [0, 0, src.stored, 1],
                output: [0, 0, dst.stored, 1],
            }
        };
        let factors = convolution_factors(t.n, t.inverse, convolution);
        self.push_stage(cfg, layout, src.buf, dst.buf, &factors);
    }

    /// `t` with two signals to a complex transform ([`OddReal::Twins`]) where
    /// it widens real signals, the stage's innermost batch dimension holds
    /// `signals ≥ 2` of them, and the transform runs as a convolution or
    /// through radices up to 7. Lengths with a prime radix above 7, whose
    /// butterflies already bind the registers, ran slower as twins and widen
    /// (benches/results/2026-11-25_odd_real_twins_h100.md).
    pub(super) fn twinned(&self, t: &Transform, convolution: Option<Convolution>, signals: usize) -> Transform {
        let forms = match (t.input, t.output) {
            (InputForm::Real, OutputForm::Complex) => Some((InputForm::RealTwins, OutputForm::TwinSpectra)),
            (InputForm::Hermitian, OutputForm::RealPart) => Some((InputForm::HermitianTwins, OutputForm::TwinReals)),
            _ => None,
        };
        match forms {
            Some((input, output))
                if self.options.odd_real == OddReal::Twins
                    && signals >= 2
                    && (convolution.is_some() || is_smooth(t.n)) =>
            {
                Transform { input, output, ..*t }
            }
            _ => *t,
        }
    }
}
