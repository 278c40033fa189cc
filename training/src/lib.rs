//! Training Fourier neural operators on Burn, as neuraloperator trains them:
//! relative L2 / H1 losses ([`loss`]), AdamW ([`optim`], one kernel a
//! parameter on GPUs) with StepLR, cosine or plateau
//! schedules ([`schedule`]), outputs normalised for training and de-normalised
//! for evaluation ([`data`]), evaluation on several test sets (other
//! resolutions included), checkpoints that resume exactly ([`checkpoint`]),
//! per-epoch metrics (`metrics.jsonl`) and a prediction plot ([`plot`]).

pub mod checkpoint;
pub mod config;
pub mod data;
pub mod data_parallel;
pub mod evaluate;
mod exchange;
mod faults;
pub mod inference;
pub mod loss;
mod memory;
pub mod optim;
pub mod plot;
pub mod run;
pub mod schedule;
pub mod trainer;

pub use config::TrainConfig;
pub use data::PreparedData;
pub use data_parallel::{train_data_parallel, Replicas};
pub use inference::{checkpoint_normalizers, predict_with, Predictor};
pub use run::{RunOptions, Start, TrainObserver, TrainSummary};
pub use trainer::{check_start, run_files, train};

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("configuration: {0}")]
    Config(String),
    #[error("data: {0}")]
    Data(String),
    #[error("{0}")]
    Io(String),
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// The output directory does not fit the run asked for (an earlier run, or none to resume).
    #[error("{0}")]
    OutDir(String),
    /// Data-parallel training's exchange between replicas failed.
    #[error("data-parallel training: {0}")]
    Collective(String),
    #[error("training diverged: {0}")]
    Diverged(String),
    #[error(transparent)]
    Model(#[from] fno_models::ModelError),
    #[error(transparent)]
    Dataset(#[from] fno_datasets::DataError),
}
