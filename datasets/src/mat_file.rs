//! MATLAB `.mat` files, as the original FNO datasets ship (`coeff`/`sol`,
//! `a`/`u`): v5 through the `matfile` crate (compressed or not), v7.3 through
//! HDF5. MATLAB stores column-major, so both are reordered to C order with
//! MATLAB's dims (`[N, X, Y]` stays `[N, X, Y]`). v5 elements are inflated and
//! checked here (`numeric_arrays`) before matfile parses them.

use std::collections::BTreeMap;
use std::path::Path;

use matfile::{MatFile, NumericData};

use crate::dataset::Array;
use crate::npy::fortran_to_c;
use crate::{hdf5_file, DataError, StoredTensor, Tensors};
use fno_formats::budget::Budget;

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

/// Element types of v5 files (miMATRIX, miCOMPRESSED, miINT8, miINT32, miUINT32).
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
const MI_INT8: u32 = 1;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;

/// The `u32` at `at`, in the file's byte order.
fn u32_at(bytes: &[u8], at: usize, big: bool) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if big {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    })
}

/// The type and data of the element whose tag is at `at` (8 bytes or, with
/// `small`, possibly the 4-byte small format), and where its data ends.
/// Declared lengths are checked against the bytes there are.
fn element(bytes: &[u8], at: usize, big: bool, small: bool) -> Option<(u32, &[u8], usize)> {
    let word = u32_at(bytes, at, big)?;
    let (kind, start, len) = match word >> 16 {
        n if small && n > 0 => (word & 0xffff, at + 4, n as usize),
        _ => (word, at + 8, u32_at(bytes, at + 4, big)? as usize),
    };
    let data = bytes.get(start..)?.get(..len)?;
    Some((kind, data, start + len))
}

/// Whether a matrix element holds a numeric array, checking what matfile
/// trusts: its dims non-negative and their product an `i32` (matfile
/// multiplies them unchecked). Cells, structs, chars and sparse arrays, which
/// matfile skips, are `false`.
fn numeric_matrix(body: &[u8], big: bool) -> Result<bool, String> {
    let flags = element(body, 0, big, false)
        .filter(|&(kind, flags, _)| kind == MI_UINT32 && flags.len() == 8)
        .and_then(|(_, flags, _)| u32_at(flags, 0, big))
        .ok_or("an array without its flags")?;
    match flags & 0xff {
        1..=5 => return Ok(false),
        6..=15 => {}
        class => return Err(format!("an array of unknown class {class}")),
    }
    let (dims, end) = match element(body, 16, big, false) {
        Some((MI_INT32, dims, end)) if dims.len() >= 8 && dims.len() % 4 == 0 => (dims, end),
        _ => return Err("an array without its dimensions".into()),
    };
    let name = match element(body, end.next_multiple_of(8), big, true) {
        Some((MI_INT8, name, _)) => String::from_utf8_lossy(name).into_owned(),
        _ => return Err("an array without its name".into()),
    };
    let dims: Vec<i32> = (0..dims.len() / 4)
        .map(|i| u32_at(dims, 4 * i, big).expect("in dims") as i32)
        .collect();
    if dims.iter().any(|&d| d < 0) || dims.iter().try_fold(1i32, |acc, &d| acc.checked_mul(d)).is_none() {
        return Err(format!("{name}: invalid dimensions {dims:?}"));
    }
    Ok(true)
}

/// The v5 file `bytes` rewritten for matfile: its header, then the element of
/// each numeric array, uncompressed (within `budget`) and its dims checked.
/// matfile prints (`eprintln!`) when a zlib stream is corrupt and (`println!`)
/// on an element that is not an array: given only uncompressed arrays, it
/// never reaches either, so reading a file prints nothing.
fn numeric_arrays(bytes: &[u8], budget: &mut Budget) -> Result<Vec<u8>, String> {
    let big = match bytes.get(126..128) {
        Some(b"IM") => false,
        Some(b"MI") => true,
        _ => return Err("no MATLAB v5 header".into()),
    };
    let mut out = bytes[..128].to_vec();
    let mut at = 128;
    while at < bytes.len() {
        let fail = |what: &str| format!("element at byte {at}: {what}");
        let (kind, data, end) = element(bytes, at, big, false).ok_or_else(|| fail("truncated"))?;
        let inflated;
        let body = match kind {
            MI_MATRIX => data,
            MI_COMPRESSED => {
                inflated = budget
                    .read_all(flate2::read::ZlibDecoder::new(data))
                    .map_err(|e| fail(&format!("compressed data: {e}")))?;
                match element(&inflated, 0, big, false) {
                    Some((MI_MATRIX, body, _)) => body,
                    _ => return Err(fail("compressed data that is not an array")),
                }
            }
            _ => return Err(fail(&format!("type {kind}, not an array"))),
        };
        if numeric_matrix(body, big).map_err(|e| fail(&e))? {
            let tag = [MI_MATRIX, body.len() as u32].map(|v| if big { v.to_be_bytes() } else { v.to_le_bytes() });
            out.extend(tag.as_flattened());
            out.extend(body);
            out.resize(out.len().next_multiple_of(8), 0);
        }
        // Uncompressed elements are padded to 8 bytes, compressed ones not.
        at = if kind == MI_COMPRESSED {
            end
        } else {
            end.next_multiple_of(8)
        };
    }
    Ok(out)
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
                let data = fortran_to_c(&t.array.data, &shape, 1).map_err(|e| err(path, format!("{name}: {e}")))?;
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
    let arrays = numeric_arrays(&bytes, &mut Budget::for_file(bytes.len() as u64))
        .map_err(|e| err(path, format!("not a readable MATLAB v5 file: {e}")))?;
    let mat =
        MatFile::parse(arrays.as_slice()).map_err(|e| err(path, format!("not a readable MATLAB v5 file ({e})")))?;
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
        let data = fortran_to_c(&values, &shape, 1).map_err(|e| err(path, format!("{}: {e}", a.name())))?;
        out.insert(
            a.name().to_string(),
            StoredTensor {
                dtype: dtype.to_string(),
                array: Array::new(shape, data)?,
            },
        );
    }
    Ok((out, BTreeMap::new()))
}
