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
pub mod options;
pub mod output;
pub mod safetensors_file;
pub mod torch;

/// Whether this build reads and writes HDF5 files (the `hdf5` feature).
pub const HDF5: bool = cfg!(feature = "hdf5");

pub use dataset::{Array, PdeDataset};
pub use fno_formats::budget::buffer;
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
    #[error("{}", one_line(.0))]
    Shape(String),
    #[error("{}: {}", one_line(.path), one_line(.reason))]
    File { path: String, reason: String },
    #[error("{}", one_line(.0))]
    Invalid(String),
}

/// `text` with its control characters escaped (`\n` as `\\n`): names read
/// from a file (keys, storage entries) may hold line breaks, and an error is
/// one line.
fn one_line(text: &str) -> String {
    text.trim_end()
        .chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn errors_are_one_line_whatever_names_the_file_holds() {
        let e = super::DataError::File {
            path: "a.pt".into(),
            reason: "storage archive/data/\n\t: not found\n".into(),
        };
        assert_eq!(e.to_string(), "a.pt: storage archive/data/\\n\\t: not found");
    }
}
