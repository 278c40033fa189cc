//! Our dataset files in safetensors: tensors `x` `[N, Cin, *grid]` and `y`
//! `[N, Cout, *grid]` (F32, or any float/int dtype when written by others),
//! the dataset's metadata in the header. [`SafetensorsSamples`] reads samples
//! on demand, seeking to each, so a file larger than memory can be trained on.
//!
//! The header is read and validated by the `safetensors` crate's [`Metadata`]
//! and files are written by `safetensors::serialize_to_file`; the data are read
//! here, by byte ranges, so that no file need fit in memory.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use safetensors::tensor::Metadata;
use safetensors::{Dtype, View};

use crate::dataset::{Array, PdeDataset};
use crate::{DataError, StoredTensor, Tensors};

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// One tensor of the header: dtype, shape and where its data start in the file.
#[derive(Clone, Debug)]
struct Entry {
    dtype: Dtype,
    shape: Vec<usize>,
    start: u64,
}

/// Bytes per value of the dtypes we read.
fn width(dtype: Dtype) -> Option<usize> {
    Some(match dtype {
        Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
        Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
        Dtype::F16 | Dtype::BF16 | Dtype::I16 | Dtype::U16 => 2,
        Dtype::I8 | Dtype::U8 | Dtype::BOOL => 1,
        _ => return None,
    })
}

fn decode(dtype: Dtype, c: &[u8]) -> f32 {
    match dtype {
        Dtype::F64 => f64::from_le_bytes(c.try_into().unwrap()) as f32,
        Dtype::F32 => f32::from_le_bytes(c.try_into().unwrap()),
        Dtype::F16 => half::f16::from_le_bytes([c[0], c[1]]).to_f32(),
        Dtype::BF16 => half::bf16::from_le_bytes([c[0], c[1]]).to_f32(),
        Dtype::I64 => i64::from_le_bytes(c.try_into().unwrap()) as f32,
        Dtype::U64 => u64::from_le_bytes(c.try_into().unwrap()) as f32,
        Dtype::I32 => i32::from_le_bytes(c.try_into().unwrap()) as f32,
        Dtype::U32 => u32::from_le_bytes(c.try_into().unwrap()) as f32,
        Dtype::I16 => i16::from_le_bytes([c[0], c[1]]) as f32,
        Dtype::U16 => u16::from_le_bytes([c[0], c[1]]) as f32,
        Dtype::I8 => c[0] as i8 as f32,
        _ => c[0] as f32, // U8, BOOL
    }
}

/// Header of a safetensors file: its entries and metadata.
type Header = (BTreeMap<String, Entry>, BTreeMap<String, String>);

/// The safetensors crate's limit on a header's size.
const MAX_HEADER: u64 = 100_000_000;

/// Reads and validates the header alone (the safetensors crate's [`Metadata`]:
/// offsets contiguous and matching each shape and dtype), then checks that the
/// file holds all the data it declares, so the data can be read on demand.
fn read_header(path: &Path, file: &mut File) -> Result<Header, DataError> {
    let size = file.metadata().map_err(|e| err(path, e.to_string()))?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| err(path, "not a safetensors file (shorter than 8 bytes)"))?;
    let header_len = u64::from_le_bytes(len);
    if header_len > size - 8 {
        return Err(err(
            path,
            format!("header of {header_len} bytes runs past the end of the file (truncated or not safetensors)"),
        ));
    }
    if header_len > MAX_HEADER {
        return Err(err(path, format!("header of {header_len} bytes is too large")));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header).map_err(|e| err(path, e.to_string()))?;
    let metadata: Metadata =
        serde_json::from_slice(&header).map_err(|e| err(path, format!("unreadable header: {e}")))?;
    let data_start = 8 + header_len;
    let data_len = metadata.data_len() as u64;
    if data_start + data_len != size {
        return Err(err(
            path,
            format!(
                "the header declares {data_len} bytes of data, the file holds {} (truncated or corrupt)",
                size - data_start
            ),
        ));
    }
    let mut entries = BTreeMap::new();
    for (name, info) in metadata.tensors() {
        if width(info.dtype).is_none() {
            return Err(err(path, format!("{name}: dtype {} is not supported", info.dtype)));
        }
        entries.insert(
            name,
            Entry {
                dtype: info.dtype,
                shape: info.shape.clone(),
                start: data_start + info.data_offsets.0 as u64,
            },
        );
    }
    let metadata = metadata.metadata().clone().unwrap_or_default().into_iter().collect();
    Ok((entries, metadata))
}

/// Positional reads (no shared cursor), so one open file serves many threads.
fn read_values(path: &Path, file: &File, e: &Entry, from: u64, count: usize) -> Result<Vec<f32>, DataError> {
    use std::os::unix::fs::FileExt;
    let w = width(e.dtype).expect("checked with the header");
    let mut bytes = crate::buffer::<u8>(count * w).map_err(|m| err(path, m))?;
    bytes.resize(count * w, 0);
    file.read_exact_at(&mut bytes, from)
        .map_err(|x| err(path, x.to_string()))?;
    Ok(bytes.chunks_exact(w).map(|c| decode(e.dtype, c)).collect())
}

/// Every tensor of a safetensors file, widened to f32, and its metadata.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<Tensors, DataError> {
    let path = path.as_ref();
    let mut file = File::open(path).map_err(|e| err(path, e.to_string()))?;
    let (entries, metadata) = read_header(path, &mut file)?;
    let mut out = BTreeMap::new();
    for (name, e) in entries {
        let count = e.shape.iter().product();
        let data = read_values(path, &file, &e, e.start, count)?;
        out.insert(
            name,
            StoredTensor {
                dtype: e.dtype.to_string(),
                array: Array::new(e.shape.clone(), data)?,
            },
        );
    }
    Ok((out, metadata))
}

/// An F32 tensor to write: its values' bytes borrowed on little-endian machines.
struct F32View<'a> {
    shape: &'a [usize],
    data: &'a [f32],
}

impl View for F32View<'_> {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    fn shape(&self) -> &[usize] {
        self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        if cfg!(target_endian = "little") {
            Cow::Borrowed(bytemuck::cast_slice(self.data))
        } else {
            Cow::Owned(self.data.iter().flat_map(|v| v.to_le_bytes()).collect())
        }
    }

    fn data_len(&self) -> usize {
        4 * self.data.len()
    }
}

/// Writes `data` as `x`, `y` (F32) with its metadata, through [`crate::output`].
pub fn write(path: impl AsRef<Path>, data: &PdeDataset) -> Result<(), DataError> {
    let path = path.as_ref();
    let tensors = [("x", &data.inputs), ("y", &data.outputs)].map(|(name, a)| {
        (
            name,
            F32View {
                shape: &a.shape,
                data: &a.data,
            },
        )
    });
    let metadata: HashMap<String, String> = data.metadata.clone().into_iter().collect();
    crate::output::write_at(path, |at| {
        safetensors::serialize_to_file(tensors, Some(metadata), at).map_err(std::io::Error::other)
    })
    .map_err(|e| err(path, e.to_string()))
}

/// Samples of a dataset file read on demand: `x` and `y` must be `[N, C, *grid]`
/// with the same `N` and grid.
pub struct SafetensorsSamples {
    path: PathBuf,
    file: File,
    x: Entry,
    y: Entry,
    pub metadata: BTreeMap<String, String>,
}

impl SafetensorsSamples {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, DataError> {
        let path = path.as_ref().to_path_buf();
        let mut file = File::open(&path).map_err(|e| err(&path, e.to_string()))?;
        let (mut entries, metadata) = read_header(&path, &mut file)?;
        let mut take = |k: &str| {
            entries
                .remove(k)
                .ok_or_else(|| err(&path, format!("no tensor '{k}' (a dataset file holds x and y)")))
        };
        let (x, y) = (take("x")?, take("y")?);
        let paired = x.shape.len() >= 3 && x.shape.len() == y.shape.len() && x.shape[0] == y.shape[0];
        if !paired || x.shape[2..] != y.shape[2..] {
            return Err(err(
                &path,
                format!(
                    "x {:?} and y {:?} must be [N, C, *grid] with the same N and grid",
                    x.shape, y.shape
                ),
            ));
        }
        Ok(SafetensorsSamples {
            path,
            file,
            x,
            y,
            metadata,
        })
    }

    pub fn len(&self) -> usize {
        self.x.shape[0]
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shapes of one sample's input and output (`[C, *grid]`).
    pub fn sample_shapes(&self) -> (&[usize], &[usize]) {
        (&self.x.shape[1..], &self.y.shape[1..])
    }

    /// Sample `i`'s input and output values.
    pub fn get(&self, i: usize) -> Result<(Vec<f32>, Vec<f32>), DataError> {
        if i >= self.len() {
            return Err(err(&self.path, format!("sample {i} of {}", self.len())));
        }
        let (path, file) = (&self.path, &self.file);
        let one = |e: &Entry| {
            let n: usize = e.shape[1..].iter().product();
            let from = e.start + (i * n * width(e.dtype).expect("checked")) as u64;
            read_values(path, file, e, from, n)
        };
        Ok((one(&self.x)?, one(&self.y)?))
    }
}
