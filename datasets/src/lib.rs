//! PDE datasets: file formats, generators, normalisers and batchers, all
//! producing or taking one in-memory form ([`PdeDataset`]).

pub mod dataset;
pub mod npy;

pub use dataset::{Array, PdeDataset};

/// Errors from loaders, writers and generators; each names what it concerns
/// (file, key, expected shape).
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{0}")]
    Shape(String),
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    #[error("{0}")]
    Invalid(String),
}
