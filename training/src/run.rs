//! What a training run takes besides its configuration and data (its
//! options), what it reports to and what it returns. A leaf module: the
//! trainer and data-parallel training both use it.

use std::path::PathBuf;

use fno_kernels::fft::Planning;
use fno_ops::{FaultCounts, FaultTolerance, SpectralImpl};

use crate::checkpoint::EpochMetrics;

/// What a run reports as it goes.
pub trait TrainObserver {
    /// After batch `done` of `total`: `loss` is the mean loss per sample of
    /// the batches since the last report (reports come every few batches).
    fn batch(&mut self, epoch: usize, epochs: usize, done: usize, total: usize, loss: f64);
    fn epoch(&mut self, metrics: &EpochMetrics);
    fn message(&mut self, text: &str);
}

/// Where a finished run left its files, and its last metrics.
#[derive(Debug)]
pub struct TrainSummary {
    pub out_dir: PathBuf,
    pub last_checkpoint: PathBuf,
    pub best_checkpoint: Option<PathBuf>,
    pub metrics: PathBuf,
    pub plot: Option<PathBuf>,
    pub history: Vec<EpochMetrics>,
    /// What the checked kernels counted this invocation (`None` with fault
    /// tolerance off).
    pub faults: Option<FaultCounts>,
}

/// How a run treats the output directory's earlier run (its `last.state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// A new run; refused where the directory already holds one.
    Fresh,
    /// Continue the run the directory holds; refused where it holds none.
    Resume,
    /// A new run in place of the one the directory holds, whose files go.
    Overwrite,
}

/// Options of one invocation (not part of the configuration).
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub spectral_impl: SpectralImpl,
    /// Checksums in the spectral convolutions (unfused path; docs/abft.md).
    pub fault_tolerance: FaultTolerance,
    /// How the kernel path lowers its FFT plans.
    pub fft_planning: Planning,
    pub start: Start,
    /// Stop after this many epochs of this invocation (tests; a killed run).
    pub stop_after: Option<usize>,
    /// A checkpoint (any `Fno::load_checkpoint` reads) whose weights a fresh
    /// run starts from; the configuration's model must be its architecture.
    pub init_from: Option<Vec<u8>>,
}
