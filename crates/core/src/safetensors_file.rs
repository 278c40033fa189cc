//! Safetensors files as their tensors (widened to f32, complex values as
//! (re, im) pairs) and header metadata, read and written through the
//! `safetensors` crate: the container of our checkpoints and of
//! neuraloperator's exports.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use safetensors::{Dtype, SafeTensorError, SafeTensors, View};

use crate::error::ModelError;

/// A tensor read from a safetensors file, widened to f32; complex values are
/// interleaved with a trailing dim of 2.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// Tensors and header metadata of a safetensors file, read and written
/// through the `safetensors` crate.
#[derive(Clone, Debug, Default)]
pub struct SafeTensorsFile {
    pub tensors: BTreeMap<String, StoredTensor>,
    pub metadata: HashMap<String, String>,
    /// The tensors stored (or to store) as native C64: their values are
    /// (re, im) pairs, the trailing 2 of their shape not written.
    pub complex: BTreeSet<String>,
}

fn bad(m: impl Into<String>) -> ModelError {
    ModelError::Checkpoint(m.into())
}

/// The safetensors crate's error, said of a checkpoint (`bytes`, when read).
fn unreadable(e: SafeTensorError, bytes: &[u8]) -> ModelError {
    use SafeTensorError::*;
    let declared = bytes
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")));
    bad(match (&e, declared) {
        (HeaderTooSmall, _) => "not a safetensors file (shorter than its header length)".to_string(),
        (HeaderTooLarge | InvalidHeaderLength, Some(n)) if n > bytes.len() as u64 - 8 => {
            format!("header of {n} bytes runs past the end of the file (truncated or not safetensors)")
        }
        (MetadataIncompleteBuffer, _) => {
            "the data do not fill the file as its header declares (truncated or corrupt)".to_string()
        }
        _ => format!("not a readable safetensors file: {e}"),
    })
}

/// A tensor to write, F32 or (`complex`) C64 pairs: its values' bytes
/// borrowed on little-endian machines.
struct F32View<'a> {
    tensor: &'a StoredTensor,
    complex: bool,
}

impl View for F32View<'_> {
    fn dtype(&self) -> Dtype {
        if self.complex {
            Dtype::C64
        } else {
            Dtype::F32
        }
    }

    fn shape(&self) -> &[usize] {
        let shape = &self.tensor.shape;
        if self.complex {
            &shape[..shape.len() - 1]
        } else {
            shape
        }
    }

    fn data(&self) -> Cow<'_, [u8]> {
        let data = &self.tensor.data;
        if cfg!(target_endian = "little") {
            Cow::Borrowed(bytemuck::cast_slice(data))
        } else {
            Cow::Owned(data.iter().flat_map(|v| v.to_le_bytes()).collect())
        }
    }

    fn data_len(&self) -> usize {
        4 * self.tensor.data.len()
    }
}

impl SafeTensorsFile {
    /// Parses a safetensors file (header and offsets validated by the
    /// `safetensors` crate); every floating-point dtype is widened to f32, C64
    /// kept as interleaved pairs.
    pub fn parse(bytes: &[u8]) -> Result<Self, ModelError> {
        let (header_len, header) = SafeTensors::read_metadata(bytes).map_err(|e| unreadable(e, bytes))?;
        // Validated: every tensor's offsets lie in the data, which end the file.
        let data = &bytes[8 + header_len..];
        let mut file = SafeTensorsFile {
            metadata: header.metadata().clone().unwrap_or_default(),
            ..Default::default()
        };
        for (name, info) in header.tensors() {
            let (start, end) = info.data_offsets;
            let (values, complex) = decode(info.dtype, &data[start..end]).map_err(|m| bad(format!("{name}: {m}")))?;
            let mut shape = info.shape.clone();
            if complex {
                shape.push(2);
                file.complex.insert(name.clone());
            }
            file.tensors.insert(name, StoredTensor { shape, data: values });
        }
        Ok(file)
    }

    /// Serialises the tensors as F32, or C64 where [`Self::complex`] names
    /// them (sorted by name), with the metadata; or names a tensor whose values
    /// do not fill its shape.
    pub fn try_to_bytes(&self) -> Result<Vec<u8>, ModelError> {
        for (name, t) in &self.tensors {
            let count = t.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if count != Some(t.data.len()) {
                return Err(bad(format!("{name}: {} values for shape {:?}", t.data.len(), t.shape)));
            }
            if self.complex.contains(name) && t.shape.last() != Some(&2) {
                return Err(bad(format!(
                    "{name}: shape {:?} has no trailing (re, im) pair",
                    t.shape
                )));
            }
        }
        let views = self.tensors.iter().map(|(name, t)| {
            let complex = self.complex.contains(name);
            (name, F32View { tensor: t, complex })
        });
        safetensors::serialize(views, Some(self.metadata.clone()))
            .map_err(|e| bad(format!("cannot write the checkpoint: {e}")))
    }

    /// [`Self::try_to_bytes`] of tensors known to fill their shapes.
    ///
    /// # Panics
    /// If a tensor's values do not fill its shape.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.try_to_bytes().unwrap_or_else(|e| panic!("{e}"))
    }
}

/// Little-endian values of `dtype` as f32; complex dtypes interleaved (and flagged).
/// The crate has checked that `raw` holds exactly the shape's values.
fn decode(dtype: Dtype, raw: &[u8]) -> Result<(Vec<f32>, bool), String> {
    let f32s = || {
        raw.chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect()
    };
    Ok(match dtype {
        Dtype::F32 => (f32s(), false),
        Dtype::C64 => (f32s(), true),
        Dtype::F64 => (
            raw.chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()) as f32)
                .collect(),
            false,
        ),
        Dtype::F16 => (
            raw.chunks_exact(2)
                .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            false,
        ),
        Dtype::BF16 => (
            raw.chunks_exact(2)
                .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
                .collect(),
            false,
        ),
        other => return Err(format!("dtype {other} is not a floating-point type")),
    })
}
