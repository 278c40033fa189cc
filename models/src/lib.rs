//! Fourier neural operators as Burn modules: neuraloperator 2.0's `FNO`
//! ([`Fno`], configured by [`FnoConfig`] under neuraloperator's argument names)
//! and its safetensors checkpoints, ours and neuraloperator's state_dict
//! exports ([`checkpoint`]). The spectral layers run through `fno-ops`, whose
//! implementation ([`fno_ops::SpectralImpl`]) is chosen per model.

pub mod checkpoint;
pub mod config;
mod factorized;
pub mod fno;
pub mod infer;
pub mod neuralop_files;
pub mod point_cloud;
pub mod rank;
pub mod recompute;

pub use config::{BlockPrecision, FnoConfig};
pub use fno::Fno;
pub use infer::infer;
pub use point_cloud::{NonUniformSpectralConv, PointFno, PointFnoConfig};
pub use rank::Rank;
pub use recompute::Recompute;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Checkpoint(String),
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Spectral(#[from] fno_ops::SpectralError),
}
