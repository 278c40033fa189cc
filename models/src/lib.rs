//! Fourier neural operators as Burn modules: neuraloperator 2.0's `FNO`
//! ([`Fno`], configured by [`FnoConfig`] under neuraloperator's argument names)
//! and its safetensors checkpoints, ours and neuraloperator's state_dict
//! exports ([`checkpoint`]). The spectral layers run through `fno-ops`, whose
//! implementation ([`fno_ops::SpectralImpl`]) is chosen per model.

pub mod checkpoint;
mod factorized;
pub mod fno;
pub mod infer;
pub mod point_cloud;
pub mod recompute;

pub use fno_core::{config, neuralop_files, rank, ModelError};

pub use config::{BlockPrecision, FnoConfig};
pub use fno::{Fno, ModelSettings};
pub use infer::infer;
pub use point_cloud::{NonUniformSpectralConv, PointFno, PointFnoConfig};
pub use rank::Rank;
pub use recompute::Recompute;
