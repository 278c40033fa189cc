//! The stage kernel's arguments as types: what a launch binds
//! ([`StageTables`], [`FaultBuffers`], with the [`TileGrid`] of its tiles),
//! and what the kernel's helpers hand one another ([`TileMemory`],
//! [`TileChecks`], [`TileUnit`], [`ResidentInputs`]).
//!
//! [`TileGrid`]: super::coords::TileGrid

use cubecl::prelude::*;

use crate::precision::Storage;

use super::coords::TileCoords;

/// The tables a stage reads: the pass twiddles, the four-step twiddle's
/// coarse and fine factors, and the stage's factors (chirp, Rader, fold).
/// Stages without a four-step twiddle bind the pass twiddles in its place.
#[derive(CubeLaunch, CubeType)]
pub struct StageTables<F: Float> {
    pub twiddles: Array<F>,
    pub post_coarse: Array<F>,
    pub post_fine: Array<F>,
    pub factors: Array<F>,
}

#[cube]
impl<F: Float> StageTables<F> {
    /// The tables of a stage without a four-step twiddle, which reads its
    /// pass twiddles in that one's place.
    // The arguments are used in the expansion only.
    #[allow(unused_variables)]
    pub fn unsplit(twiddles: &Array<F>, factors: &Array<F>) -> Self {
        intrinsic!(|_| StageTablesExpand {
            twiddles: twiddles.clone(),
            post_coarse: twiddles.clone(),
            post_fine: twiddles,
            factors,
        })
    }
}

/// A stage's fault tolerance (`fft/fault.rs`): the checksum weights, the
/// fault counters and repair list, and a test's injection (tile, unit,
/// value, bit). Unchecked stages bind one-element arrays.
#[derive(CubeLaunch, CubeType)]
pub struct FaultBuffers<F: Float> {
    pub checks: Array<F>,
    pub faults: Array<Atomic<u32>>,
    pub inject: Array<u32>,
}

/// A cube's tile in shared memory, its real and imaginary parts apart.
#[derive(CubeType)]
pub(crate) struct TileMemory<F: Float> {
    pub re: SharedMemory<F>,
    pub im: SharedMemory<F>,
}

/// The values a thread's butterflies hold in registers, `r` a butterfly
/// (a Stockham pass's, or a split first pass's outputs).
#[derive(CubeType)]
pub(super) struct Registers<F: Float> {
    pub re: Array<F>,
    pub im: Array<F>,
}

/// What a tile's checked transform reads and sums: the stage's checksum
/// weights, the unit's running sums and the test's injection.
#[derive(CubeType)]
pub(super) struct TileChecks<F: Float> {
    pub checks: Array<F>,
    pub sums: Array<F>,
    pub inject: Array<u32>,
}

#[cube]
impl<F: Float> TileChecks<F> {
    /// A tile's checks against a launch's buffers, its sums fresh.
    // The argument is used in the expansion only.
    #[allow(unused_variables)]
    pub fn new(faults: &FaultBuffers<F>) -> Self {
        intrinsic!(|scope| TileChecksExpand {
            checks: faults.checks.clone(),
            sums: tile_sums::expand::<F>(scope),
            inject: faults.inject.clone(),
        })
    }
}

/// Where a unit works: its tile's coordinates, its signal in the tile and
/// its thread in the signal.
#[derive(CubeType, Clone, Copy)]
pub(crate) struct TileUnit {
    pub at: TileCoords,
    pub signal: usize,
    pub thread: usize,
}

/// What only a resident cube's passes read: the input it staged and the
/// twiddles it holds (see `held_twiddles`). Other cubes bind one-element
/// placeholders.
#[derive(CubeType)]
pub(super) struct ResidentInputs<F: Float, S: Storage, N: Size> {
    pub staged: SharedMemory<Vector<S::Elem, N>>,
    pub held: Array<F>,
}

/// A unit's running sums: the checksum difference (re, im), the squared
/// norms of the input's and the output's checksum terms (what their
/// round-off scales with), and the faults it injected.
const SUMS: usize = 5;

/// Fresh sums for a tile.
#[cube]
pub(super) fn tile_sums<F: Float>() -> Array<F> {
    let mut sums = Array::<F>::new(SUMS);
    #[unroll]
    for i in 0..SUMS {
        sums[i] = F::new(0.0);
    }
    sums
}
