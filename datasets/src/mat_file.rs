//! MATLAB `.mat` files, as the original FNO datasets ship (`coeff`/`sol`,
//! `a`/`u`): v5 through the `matfile` crate (compressed or not), v7.3 through
//! HDF5. MATLAB stores column-major, so both are reordered to C order with
//! MATLAB's dims (`[N, X, Y]` stays `[N, X, Y]`).

use std::collections::BTreeMap;
use std::path::Path;

use matfile::{MatFile, NumericData};

use crate::dataset::Array;
use crate::npy::fortran_to_c;
use crate::{hdf5_file, DataError, StoredTensor, Tensors};

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// v7.3 files are HDF5 files behind a 512-byte user block.
fn is_hdf5(bytes: &[u8]) -> bool {
    const SIGNATURE: &[u8] = b"\x89HDF\r\n\x1a\n";
    bytes.starts_with(SIGNATURE) || bytes.get(512..520) == Some(SIGNATURE)
}

/// Every numeric array of a `.mat` file, widened to f32, in C order.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<Tensors, DataError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| err(path, e.to_string()))?;
    if is_hdf5(&bytes) {
        // HDF5 holds MATLAB's column-major array as the C-order array of the
        // reversed dims: reverse them back.
        let (tensors, metadata) = hdf5_file::read_tensors(path)?;
        let tensors = tensors
            .into_iter()
            .map(|(name, t)| {
                let shape: Vec<usize> = t.array.shape.iter().rev().copied().collect();
                let data = fortran_to_c(&t.array.data, &shape, 1);
                Ok((
                    name,
                    StoredTensor {
                        dtype: t.dtype,
                        array: Array::new(shape, data)?,
                    },
                ))
            })
            .collect::<Result<BTreeMap<_, _>, DataError>>()?;
        return Ok((tensors, metadata));
    }
    let mat =
        MatFile::parse(bytes.as_slice()).map_err(|e| err(path, format!("not a readable MATLAB v5 file ({e})")))?;
    let mut out = BTreeMap::new();
    for a in mat.arrays() {
        let widen = |v: &mut dyn Iterator<Item = f32>| v.collect::<Vec<f32>>();
        let (dtype, values, complex) = match a.data() {
            NumericData::Double { real, imag } => {
                ("double", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some())
            }
            NumericData::Single { real, imag } => ("single", real.clone(), imag.is_some()),
            NumericData::Int8 { real, imag } => ("int8", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some()),
            NumericData::UInt8 { real, imag } => ("uint8", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some()),
            NumericData::Int16 { real, imag } => ("int16", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some()),
            NumericData::UInt16 { real, imag } => {
                ("uint16", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some())
            }
            NumericData::Int32 { real, imag } => ("int32", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some()),
            NumericData::UInt32 { real, imag } => {
                ("uint32", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some())
            }
            NumericData::Int64 { real, imag } => ("int64", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some()),
            NumericData::UInt64 { real, imag } => {
                ("uint64", widen(&mut real.iter().map(|&v| v as f32)), imag.is_some())
            }
        };
        if complex {
            return Err(err(
                path,
                format!("{}: complex arrays are not PDE fields this loader reads", a.name()),
            ));
        }
        let shape = a.size().clone();
        out.insert(
            a.name().to_string(),
            StoredTensor {
                dtype: dtype.to_string(),
                array: Array::new(shape.clone(), fortran_to_c(&values, &shape, 1))?,
            },
        );
    }
    Ok((out, BTreeMap::new()))
}
