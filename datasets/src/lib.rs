//! PDE datasets: file formats, generators, normalisers and batchers, all
//! producing or taking one in-memory form ([`PdeDataset`]).

use std::collections::BTreeMap;

pub mod batch;
pub mod dataset;
pub mod generate;
#[cfg(feature = "hdf5")]
pub mod hdf5_file;
#[cfg(not(feature = "hdf5"))]
#[path = "hdf5_unavailable.rs"]
pub mod hdf5_file;
pub mod load;
pub mod mat_file;
pub mod normalize;
pub mod npy;
pub mod output;
pub mod safetensors_file;
pub mod torch;

/// Whether this build reads and writes HDF5 files (the `hdf5` feature).
pub const HDF5: bool = cfg!(feature = "hdf5");

pub use dataset::{Array, PdeDataset};
pub use load::{check_output, load, read_input, read_tensors, save, LoadOptions};

/// The tensors of a file by name, and its metadata.
pub type Tensors = (BTreeMap<String, StoredTensor>, BTreeMap<String, String>);

/// A tensor as a file stores it: its dtype's name in that format and its
/// values widened to f32.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTensor {
    pub dtype: String,
    pub array: Array,
}

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
