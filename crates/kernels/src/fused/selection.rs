//! Tile selection: the schedule and tiles a problem launches with on a device.

use super::config::{FusedConfig, Schedule};
use super::problem::{entry_floats, FusedSpectralConv, PencilStrides};
use crate::fft::factor::gcd;
use crate::fft::stage::{StageConfig, StageLayout};
use crate::limits::DeviceLimits;

/// Threads a cube aims for.
const THREADS: usize = 256;
/// Signals of a stage's tile at most (short transforms have one thread each).
const MAX_TILE_SIGNALS: usize = 32;
/// Output channels a thread contracts in the resident schedule, at most.
const RESIDENT_GROUP: usize = 4;
/// Threads of a resident cube, about.
const RESIDENT_THREADS: usize = 512;
/// Output channels a resident cube owns at most.
const RESIDENT_OUT_TILE: usize = 64;
/// Cubes a resident grid keeps at least: halving the batch tile further
/// re-reads the weights, which cost more than the idle multiprocessors
/// (benches/results/2026-11-29_fused_contraction_h200.md).
const MIN_RESIDENT_CUBES: usize = 96;

impl FusedSpectralConv {
    fn cubes(&self, cfg: &FusedConfig) -> usize {
        self.inner * self.cout.div_ceil(cfg.out_tile) * self.batch.div_ceil(cfg.batch_tile)
    }

    /// The two stages on tiles of one cube: as many threads as both stages'
    /// tiles can share (whole signals each), near [`THREADS`]; pair I/O where
    /// the tensors' strides allow it.
    pub(super) fn stages_for_cube(&self, target_threads: usize) -> (StageConfig, StageConfig) {
        let (mut forward, mut inverse) = self.stages.clone();
        let (tf, ti) = (forward.threads_per_signal, inverse.threads_per_signal);
        let common = tf / gcd(tf, ti) * ti;
        // Whole multiples of both stages' threads, at most the target, tiles of
        // at most MAX_TILE_SIGNALS and no more input channels than there are.
        let most_signals = MAX_TILE_SIGNALS.min(self.cin.next_power_of_two());
        let multiple = (1..=(target_threads / common).max(1))
            .rev()
            .find(|j| j * common / tf <= most_signals && j * common / ti <= MAX_TILE_SIGNALS)
            .unwrap_or(1);
        let threads = common * multiple;
        forward.signals_per_cube = threads / tf;
        inverse.signals_per_cube = threads / ti;
        forward.store_shared = true;
        inverse.load_shared = true;
        let layout = |s: PencilStrides, parts: usize, channels: usize| {
            let [batch, channel, axis, _] = s.in_entries(parts);
            StageLayout {
                na: 1,
                nb: self.batch,
                nc: channels,
                input: [0, batch, channel, axis],
                output: [0, batch, channel, axis],
            }
        };
        let (fp, ip) = (entry_floats(&forward).0, entry_floats(&inverse).1);
        forward = forward.with_layout(&layout(self.x, fp, self.cin), false);
        inverse = inverse.with_layout(&layout(self.y, ip, self.cout), false);
        // The forward's output and the inverse's input stay in shared memory.
        forward.vector_output = false;
        inverse.vector_input = false;
        (forward, inverse)
    }

    /// The streamed schedule's tiles: cubes every backend runs, enough of
    /// them to keep `limits`' device busy where the tiles allow.
    pub fn config(&self, write_spectrum: bool, limits: &DeviceLimits) -> FusedConfig {
        let (forward, inverse) = self.stages_for_cube(THREADS);
        let mut cfg = FusedConfig {
            forward,
            inverse,
            modes: self.modes(),
            batch_tile: self.batch.next_power_of_two().min(4),
            // Every output channel in one tile where possible: each tile
            // transforms the whole input again.
            out_tile: self.cout.next_power_of_two().min(64),
            schedule: Schedule::Streamed,
            conj_weight: self.conj_weight,
            scaled: self.is_scaled(),
            biased: self.bias.is_some(),
            write_spectrum,
            vector_weight: true,
        };
        // Shrink the tiles until they fit, the batch tile first, then for
        // parallelism the output tile only down to 16 (smaller ones repeat the
        // forward transforms).
        loop {
            let over = !cfg.fits(&DeviceLimits::PORTABLE);
            let few = self.cubes(&cfg) < limits.cubes_in_flight();
            if !over && !few {
                break;
            }
            if cfg.batch_tile > 1 {
                cfg.batch_tile /= 2;
            } else if cfg.out_tile > if over { 1 } else { 16 } {
                cfg.out_tile /= 2;
            } else {
                break;
            }
        }
        cfg
    }

    /// The schedule and tiles a launch takes on a device whose cubes have
    /// `limits`: resident where it fits (measured faster
    /// on every anchor it fits: benches/results/2026-11-29_fused_contraction_h200.md),
    /// streamed otherwise.
    pub fn chosen_config(&self, write_spectrum: bool, limits: &DeviceLimits) -> FusedConfig {
        self.resident_config(write_spectrum, limits)
            .unwrap_or_else(|| self.config(write_spectrum, limits))
    }

    /// The resident schedule's tiles within a device's `limits`, on cubes of
    /// about 512 threads (fewer where the device allows fewer), if any fit: up
    /// to 64 output channels and 8 batches a cube, shrunk until they fit
    /// (batches first), then for parallelism the batch tile and then the
    /// output tile down to 32 (the sweep's best on the anchors, same file).
    pub fn resident_config(&self, write_spectrum: bool, limits: &DeviceLimits) -> Option<FusedConfig> {
        // The stages and flags are the same for every tile tried: built once.
        let base = self.resident_base(write_spectrum, RESIDENT_THREADS.min(limits.cube_threads));
        let tiles = |batch_tile, out_tile| self.with_resident_tiles(&base, batch_tile, out_tile);
        let mut cfg = tiles(self.batch.next_power_of_two().min(8), self.cout.min(RESIDENT_OUT_TILE));
        while !cfg.fits(limits) {
            if cfg.batch_tile > 1 {
                cfg = tiles(cfg.batch_tile / 2, cfg.out_tile);
            } else if cfg.out_tile > 1 {
                cfg = tiles(1, cfg.out_tile.div_ceil(2));
            } else {
                return None;
            }
        }
        while self.cubes(&cfg) < MIN_RESIDENT_CUBES {
            if cfg.batch_tile > 1 {
                cfg = tiles(cfg.batch_tile / 2, cfg.out_tile);
            } else if cfg.out_tile > 32 {
                cfg = tiles(1, cfg.out_tile / 2);
            } else {
                break;
            }
        }
        Some(cfg)
    }

    /// The resident schedule on cubes of about `threads` threads with the given
    /// tiles; each thread contracts enough output channels (up to
    /// `RESIDENT_GROUP`) for the cube's threads to cover the tile's modes.
    /// It may not fit the device ([`FusedConfig::fits`]).
    pub fn resident_tiles(
        &self,
        write_spectrum: bool,
        threads: usize,
        batch_tile: usize,
        out_tile: usize,
    ) -> FusedConfig {
        self.with_resident_tiles(&self.resident_base(write_spectrum, threads), batch_tile, out_tile)
    }

    /// This problem's flags with the stages of a cube of about `threads` threads.
    fn resident_base(&self, write_spectrum: bool, threads: usize) -> FusedConfig {
        let (forward, inverse) = self.stages_for_cube(threads);
        FusedConfig {
            forward,
            inverse,
            ..self.config(write_spectrum, &DeviceLimits::PORTABLE)
        }
    }

    /// `base` (stages and flags) resident with the given tiles (see [`Self::resident_tiles`]).
    fn with_resident_tiles(&self, base: &FusedConfig, batch_tile: usize, out_tile: usize) -> FusedConfig {
        let pairs = out_tile * self.modes();
        let group = pairs
            .div_ceil(base.threads())
            .next_power_of_two()
            .clamp(1, RESIDENT_GROUP.min(out_tile));
        FusedConfig {
            batch_tile,
            out_tile,
            schedule: Schedule::Resident { cin: self.cin, group },
            ..base.clone()
        }
    }
}
