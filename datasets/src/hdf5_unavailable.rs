//! Stands in for `hdf5_file` in builds without the `hdf5` feature (the
//! default, which leaves the HDF5 crates out of the build): every HDF5 file,
//! `.mat` v7.3 included, is a one-line error that names the feature.

use std::path::Path;

use crate::dataset::PdeDataset;
use crate::options::LoadOptions;
use crate::{DataError, Tensors};

/// The error every HDF5 entry point returns in this build.
pub fn unavailable(path: &Path) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: "HDF5 files need the `hdf5` feature, which this build lacks \
                 (rebuild with `--features hdf5`; it needs no system library)"
            .into(),
    }
}

pub fn read_tensors(path: impl AsRef<Path>) -> Result<Tensors, DataError> {
    Err(unavailable(path.as_ref()))
}

pub fn load(path: impl AsRef<Path>, _options: &LoadOptions) -> Result<PdeDataset, DataError> {
    Err(unavailable(path.as_ref()))
}

pub fn write(path: impl AsRef<Path>, _data: &PdeDataset) -> Result<(), DataError> {
    Err(unavailable(path.as_ref()))
}
