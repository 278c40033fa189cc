//! A cube's work as the kernel compiles it: the schedule, the two stages'
//! tiles, and what that takes of a device.

use crate::fft::stage::StageConfig;
use crate::limits::DeviceLimits;

/// Contraction accumulators a thread may hold (complex values).
const MAX_ACCUMULATORS: usize = 32;
/// Complex weights a resident thread loads per block of input channels, at most.
const RESIDENT_WEIGHTS: usize = 16;

/// How a cube orders its contraction (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Input channels a chunk at a time, accumulators in registers.
    Streamed,
    /// Every input channel's modes in shared memory (`cin` of them), contracted
    /// in place; each thread sums `group` output channels of one mode.
    Resident { cin: usize, group: usize },
}

/// Compile-time shape of a cube's work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FusedConfig {
    /// The forward transform over a tile of `forward.signals_per_cube` input
    /// channels (the chunk of the k-loop), its output left in shared memory.
    pub forward: StageConfig,
    /// The inverse transform over a tile of `inverse.signals_per_cube` output
    /// channels, its input filled from the accumulated modes. Both stages run
    /// on all of the cube's threads.
    pub inverse: StageConfig,
    /// Retained modes along the axis (complex).
    pub modes: usize,
    /// Batches and output channels a cube owns.
    pub batch_tile: usize,
    pub out_tile: usize,
    pub schedule: Schedule,
    pub conj_weight: bool,
    pub scaled: bool,
    pub biased: bool,
    pub write_spectrum: bool,
    /// The weight read a complex value per 8-byte load (cleared at launch for
    /// a weight that does not start on 8 bytes).
    pub vector_weight: bool,
}

impl FusedConfig {
    pub fn threads(&self) -> usize {
        self.forward.threads_per_cube()
    }

    /// Input channels transformed and contracted per step of the k-loop.
    pub fn chunk(&self) -> usize {
        self.forward.signals_per_cube
    }

    /// Output channels per inverse tile.
    pub(super) fn out_signals(&self) -> usize {
        self.inverse.signals_per_cube
    }

    /// Floats of each of the two (re, im) work tiles the stages share.
    pub(super) fn work_len(&self) -> usize {
        let tile = |cfg: &StageConfig| cfg.signals_per_cube * cfg.smem_stride;
        tile(&self.forward).max(tile(&self.inverse))
    }

    /// Floats of the modes buffer: streamed, the chunk's spectra for every
    /// batch of the tile in the k-loop and one inverse tile's accumulated modes
    /// in the epilogue; resident, every row of every batch of the tile.
    pub(super) fn modes_len(&self) -> usize {
        let rows = match self.schedule {
            Schedule::Streamed => (self.batch_tile * self.chunk()).max(self.out_signals()),
            Schedule::Resident { .. } => self.batch_tile * self.resident_rows(),
        };
        2 * self.modes * rows
    }

    /// Rows of modes a batch holds in the resident schedule: its input
    /// channels, then (in place) its output tile, read by whole inverse tiles.
    pub(super) fn resident_rows(&self) -> usize {
        let cin = match self.schedule {
            Schedule::Resident { cin, .. } => cin,
            Schedule::Streamed => 0,
        };
        cin.max(self.out_tile.next_multiple_of(self.out_signals()))
    }

    /// Modes a round of the resident contraction covers: a lane each, for
    /// every group of output channels.
    pub(super) fn resident_modes_per_round(&self) -> usize {
        let group = match self.schedule {
            Schedule::Resident { group, .. } => group,
            Schedule::Streamed => 1,
        };
        (self.threads() / self.out_tile.div_ceil(group)).clamp(1, self.modes)
    }

    /// Input channels whose weights a resident thread loads at once (and the
    /// next block's in flight while it multiplies these): the most of 4, 2, 1
    /// that divides the channels and keeps the block within
    /// [`RESIDENT_WEIGHTS`] complex values a thread.
    pub(super) fn resident_depth(&self) -> usize {
        match self.schedule {
            Schedule::Resident { cin, group } => [4, 2, 1]
                .into_iter()
                .find(|d| cin % d == 0 && d * group <= RESIDENT_WEIGHTS)
                .unwrap_or(1),
            Schedule::Streamed => 1,
        }
    }

    /// Shared memory the cube uses, in bytes.
    pub fn shared_bytes(&self) -> usize {
        4 * (2 * self.work_len() + self.modes_len())
    }

    /// (output channel, mode) pairs of the streamed contraction per thread.
    pub fn contraction_pairs(&self) -> usize {
        (self.out_tile * self.modes).div_ceil(self.threads())
    }

    /// Contraction accumulators per thread (complex).
    pub fn accumulators(&self) -> usize {
        match self.schedule {
            Schedule::Streamed => self.contraction_pairs() * self.batch_tile,
            Schedule::Resident { group, .. } => group * self.batch_tile,
        }
    }

    /// Whether a cube of these tiles fits a device's cubes, and the
    /// accumulators a thread may hold (and, resident, every group of output
    /// channels has a thread).
    pub fn fits(&self, limits: &DeviceLimits) -> bool {
        let groups_fit = match self.schedule {
            Schedule::Streamed => true,
            Schedule::Resident { group, .. } => group >= 1 && self.out_tile.div_ceil(group) <= self.threads(),
        };
        groups_fit
            && self.shared_bytes() <= limits.shared_memory
            && self.threads() <= limits.cube_threads
            && self.accumulators() <= MAX_ACCUMULATORS
    }
}
