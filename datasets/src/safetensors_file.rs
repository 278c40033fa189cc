//! Our dataset files in safetensors: tensors `x` `[N, Cin, *grid]` and `y`
//! `[N, Cout, *grid]` (F32, or any float/int dtype when written by others),
//! the dataset's metadata in the header. [`SafetensorsSamples`] reads samples
//! on demand, seeking to each, so a file larger than memory can be trained on.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::dataset::{Array, PdeDataset};
use crate::{DataError, StoredTensor, Tensors};

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// One entry of the header: dtype, shape and where its data start in the file.
#[derive(Clone, Debug)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    start: u64,
}

fn width(dtype: &str) -> Option<usize> {
    Some(match dtype {
        "F64" | "I64" | "U64" => 8,
        "F32" | "I32" | "U32" => 4,
        "F16" | "BF16" | "I16" | "U16" => 2,
        "I8" | "U8" | "BOOL" => 1,
        _ => return None,
    })
}

fn decode(dtype: &str, c: &[u8]) -> f32 {
    match dtype {
        "F64" => f64::from_le_bytes(c.try_into().unwrap()) as f32,
        "F32" => f32::from_le_bytes(c.try_into().unwrap()),
        "F16" => half::f16::from_le_bytes([c[0], c[1]]).to_f32(),
        "BF16" => half::bf16::from_le_bytes([c[0], c[1]]).to_f32(),
        "I64" => i64::from_le_bytes(c.try_into().unwrap()) as f32,
        "U64" => u64::from_le_bytes(c.try_into().unwrap()) as f32,
        "I32" => i32::from_le_bytes(c.try_into().unwrap()) as f32,
        "U32" => u32::from_le_bytes(c.try_into().unwrap()) as f32,
        "I16" => i16::from_le_bytes([c[0], c[1]]) as f32,
        "U16" => u16::from_le_bytes([c[0], c[1]]) as f32,
        "I8" => c[0] as i8 as f32,
        _ => c[0] as f32, // U8, BOOL
    }
}

/// Header of a safetensors file: its entries and metadata.
type Header = (BTreeMap<String, Entry>, BTreeMap<String, String>);

fn read_header(path: &Path, file: &mut File) -> Result<Header, DataError> {
    let size = file.metadata().map_err(|e| err(path, e.to_string()))?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| err(path, "not a safetensors file (shorter than 8 bytes)"))?;
    let header_len = u64::from_le_bytes(len);
    if header_len > size - 8 {
        return Err(err(
            path,
            format!("header of {header_len} bytes runs past the end of the file"),
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    file.read_exact(&mut header).map_err(|e| err(path, e.to_string()))?;
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| err(path, format!("unreadable header: {e}")))?;
    let data_start = 8 + header_len;
    let (mut entries, mut metadata) = (BTreeMap::new(), BTreeMap::new());
    for (name, value) in header {
        if name == "__metadata__" {
            metadata = serde_json::from_value(value).map_err(|e| err(path, format!("metadata: {e}")))?;
            continue;
        }
        let entry: serde_json::Map<String, serde_json::Value> =
            serde_json::from_value(value).map_err(|e| err(path, format!("{name}: {e}")))?;
        let dtype = entry
            .get("dtype")
            .and_then(|d| d.as_str())
            .unwrap_or_default()
            .to_string();
        let shape: Option<Vec<usize>> = entry
            .get("shape")
            .and_then(|s| s.as_array())
            .and_then(|s| s.iter().map(|d| d.as_u64().map(|d| d as usize)).collect());
        let offsets: Option<Vec<u64>> = entry
            .get("data_offsets")
            .and_then(|s| s.as_array())
            .and_then(|s| s.iter().map(|d| d.as_u64()).collect());
        let (Some(shape), Some(offsets)) = (shape, offsets) else {
            return Err(err(path, format!("{name}: header entry lacks a shape or data_offsets")));
        };
        let w = width(&dtype).ok_or_else(|| err(path, format!("{name}: dtype {dtype} is not supported")))?;
        let [start, end] = offsets[..] else {
            return Err(err(path, format!("{name}: data_offsets must be [start, end]")));
        };
        let want = shape.iter().product::<usize>() as u64 * w as u64;
        if end < start || end - start != want || data_start + end > size {
            return Err(err(
                path,
                format!(
                    "{name}: {dtype} {shape:?} needs {want} bytes at [{start}, {end}) of a {}-byte data section (truncated or corrupt)",
                    size - data_start
                ),
            ));
        }
        entries.insert(
            name,
            Entry {
                dtype,
                shape,
                start: data_start + start,
            },
        );
    }
    Ok((entries, metadata))
}

/// Positional reads (no shared cursor), so one open file serves many threads.
fn read_values(path: &Path, file: &File, e: &Entry, from: u64, count: usize) -> Result<Vec<f32>, DataError> {
    use std::os::unix::fs::FileExt;
    let w = width(&e.dtype).expect("checked with the header");
    let mut bytes = vec![0u8; count * w];
    file.read_exact_at(&mut bytes, from)
        .map_err(|x| err(path, x.to_string()))?;
    Ok(bytes.chunks_exact(w).map(|c| decode(&e.dtype, c)).collect())
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
                dtype: e.dtype.clone(),
                array: Array::new(e.shape.clone(), data)?,
            },
        );
    }
    Ok((out, metadata))
}

/// Writes `data` as `x`, `y` (F32) with its metadata, atomically (a temporary
/// file renamed into place).
pub fn write(path: impl AsRef<Path>, data: &PdeDataset) -> Result<(), DataError> {
    let path = path.as_ref();
    let mut header = serde_json::Map::new();
    header.insert(
        "__metadata__".into(),
        serde_json::to_value(&data.metadata).expect("strings"),
    );
    let mut offset = 0;
    for (name, a) in [("x", &data.inputs), ("y", &data.outputs)] {
        let bytes = a.data.len() * 4;
        header.insert(
            name.into(),
            serde_json::json!({"dtype": "F32", "shape": a.shape, "data_offsets": [offset, offset + bytes]}),
        );
        offset += bytes;
    }
    let mut text = serde_json::to_vec(&header).expect("JSON");
    text.resize(text.len().next_multiple_of(8), b' ');
    let tmp = tmp_path(path);
    let result = File::create(&tmp).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        w.write_all(&(text.len() as u64).to_le_bytes())?;
        w.write_all(&text)?;
        for a in [&data.inputs, &data.outputs] {
            for v in &a.data {
                w.write_all(&v.to_le_bytes())?;
            }
        }
        w.into_inner()?.sync_all()
    });
    result.and_then(|_| std::fs::rename(&tmp, path)).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        err(path, e.to_string())
    })
}

pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    path.with_file_name(name)
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
            let from = e.start + (i * n * width(&e.dtype).expect("checked")) as u64;
            read_values(path, file, e, from, n)
        };
        Ok((one(&self.x)?, one(&self.y)?))
    }
}
