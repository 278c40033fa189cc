//! Every supported file format into [`PdeDataset`], chosen by extension:
//! `.pt` (neuraloperator), `.npz`, `.safetensors` (ours or others'), `.h5`
//! (PDEBench's layouts or named datasets), `.mat` (v5 and v7.3), with sample
//! ranges and stride subsampling; and [`read_tensors`], the raw tensors of any
//! of them (for `fno data info`).

use std::collections::BTreeMap;
use std::path::Path;

use fno_formats::budget::Budget;

use crate::dataset::{Array, PdeDataset};
use crate::{hdf5_file, mat_file, npy, safetensors_file, torch, DataError, StoredTensor, Tensors};

// Kept at their old paths (`fno_datasets::load::LoadOptions`, …).
pub use crate::options::{LoadOptions, LAYOUT_CHANNELS, LAYOUT_KEY};

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

const INPUT_KEYS: [&str; 5] = ["x", "a", "coeff", "input", "inputs"];
const OUTPUT_KEYS: [&str; 5] = ["y", "u", "output", "outputs", "sol"];

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_lowercase()
}

/// The tensors of a file (values widened to f32) and its metadata.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<Tensors, DataError> {
    let path = path.as_ref();
    match extension(path).as_str() {
        "pt" | "pth" => Ok((torch::read_tensors(path)?, BTreeMap::new())),
        "safetensors" => safetensors_file::read_tensors(path),
        "npz" => read_npz(path),
        "h5" | "hdf5" => hdf5_file::read_tensors(path),
        "mat" => mat_file::read_tensors(path),
        "npy" => {
            let bytes = std::fs::read(path).map_err(|e| err(path, e.to_string()))?;
            let (dtype, shape, data) = npy::parse_real(&bytes).map_err(|e| err(path, e))?;
            let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("array").to_string();
            let array = Array::new(shape, data)?;
            Ok((BTreeMap::from([(name, StoredTensor { dtype, array })]), BTreeMap::new()))
        }
        _ => Err(err(path, "unknown format: expected .pt, .npz, .npy or .safetensors")),
    }
}

/// Metadata entry of the `.npz` files we write (NumPy lists it and ignores it).
const NPZ_METADATA: &str = "__metadata__.json";

fn read_npz(path: &Path) -> Result<Tensors, DataError> {
    let file = std::fs::File::open(path).map_err(|e| err(path, e.to_string()))?;
    let mut budget = Budget::for_file(file.metadata().map_err(|e| err(path, e.to_string()))?.len());
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| err(path, format!("not an .npz (zip) archive ({e})")))?;
    let (mut out, mut metadata) = (BTreeMap::new(), BTreeMap::new());
    for i in 0..zip.len() {
        let entry = zip.by_index(i).map_err(|e| err(path, e.to_string()))?;
        let name = entry.name().to_string();
        let key = match name.strip_suffix(".npy") {
            Some(key) => Some(key.to_string()),
            None if name == NPZ_METADATA => None,
            None => continue,
        };
        let bytes = budget.read_all(entry).map_err(|e| err(path, format!("{name}: {e}")))?;
        let Some(key) = key else {
            metadata = serde_json::from_slice(&bytes).map_err(|e| err(path, format!("{name}: {e}")))?;
            continue;
        };
        let (dtype, shape, data) = npy::parse_real(&bytes).map_err(|e| err(path, format!("{name}: {e}")))?;
        out.insert(
            key,
            StoredTensor {
                dtype,
                array: Array::new(shape, data)?,
            },
        );
    }
    Ok((out, metadata))
}

/// The key `chosen`, or else the first of `defaults` the file holds.
fn pick_key(
    path: &Path,
    tensors: &BTreeMap<String, StoredTensor>,
    chosen: Option<&str>,
    defaults: &[&str],
) -> Result<String, DataError> {
    let available = || tensors.keys().cloned().collect::<Vec<_>>().join(", ");
    match chosen {
        Some(k) if tensors.contains_key(k) => Ok(k.to_string()),
        Some(k) => Err(err(path, format!("no tensor '{k}' (the file holds: {})", available()))),
        None => defaults
            .iter()
            .find(|k| tensors.contains_key(**k))
            .map(|k| k.to_string())
            .ok_or_else(|| {
                err(
                    path,
                    format!(
                        "none of the keys {defaults:?} (the file holds: {}); name the key to use",
                        available()
                    ),
                )
            }),
    }
}

/// The model input a file holds, as stored: the tensor `key`, or else the
/// file's only tensor or the first of the usual input names (`x`, `a`,
/// `coeff`, `input`, `inputs`) it holds. Any format [`read_tensors`] reads.
pub fn read_input(path: impl AsRef<Path>, key: Option<&str>) -> Result<(String, StoredTensor), DataError> {
    let path = path.as_ref();
    let (mut tensors, _) = read_tensors(path)?;
    let key = match (key, tensors.len()) {
        (None, 1) => tensors.keys().next().expect("one key").clone(),
        _ => pick_key(path, &tensors, key, &INPUT_KEYS)?,
    };
    let tensor = tensors.remove(&key).expect("picked from the keys");
    Ok((key, tensor))
}

/// A dataset from `path` (see [`LoadOptions`]).
pub fn load(path: impl AsRef<Path>, options: &LoadOptions) -> Result<PdeDataset, DataError> {
    let path = path.as_ref();
    if matches!(extension(path).as_str(), "h5" | "hdf5") {
        return hdf5_file::load(path, options);
    }
    let (mut tensors, metadata) = read_tensors(path)?;
    let (xk, yk) = (
        pick_key(path, &tensors, options.input_key.as_deref(), &INPUT_KEYS)?,
        pick_key(path, &tensors, options.output_key.as_deref(), &OUTPUT_KEYS)?,
    );
    let has_channels = options
        .channel_dim
        .unwrap_or(metadata.get(LAYOUT_KEY).map(String::as_str) == Some(LAYOUT_CHANNELS));
    let mut take = |k: &str| -> Result<Array, DataError> {
        let mut a = tensors.remove(k).expect("picked from the keys").array;
        let min_rank = if has_channels { 3 } else { 2 };
        if a.shape.len() < min_rank {
            return Err(err(
                path,
                format!(
                    "'{k}' has shape {:?}: expected [samples{}, *grid]",
                    a.shape,
                    if has_channels { ", channels" } else { "" }
                ),
            ));
        }
        if !has_channels {
            a.shape.insert(1, 1);
        }
        Ok(a)
    };
    let (x, y) = (take(&xk)?, take(&yk)?);
    let mut data = PdeDataset::new(x, y).map_err(|e| err(path, format!("'{xk}' and '{yk}': {e}")))?;
    data.metadata = metadata;
    data.metadata.insert("source".into(), path.display().to_string());
    let samples = options.samples.clone().unwrap_or(0..data.len());
    if samples == (0..data.len()) && options.stride == 1 {
        return Ok(data);
    }
    data.select(samples, options.stride)
        .map_err(|e| err(path, e.to_string()))
}

/// Writes `data` in the format its extension names (`.safetensors`, `.npz`, `.h5`),
/// `x` `[N, Cin, *grid]` and `y` `[N, Cout, *grid]`, atomically.
pub fn save(path: impl AsRef<Path>, data: &PdeDataset) -> Result<(), DataError> {
    let path = path.as_ref();
    check_output(path)?;
    let mut data = data.clone();
    data.metadata.insert(LAYOUT_KEY.into(), LAYOUT_CHANNELS.into());
    match extension(path).as_str() {
        "safetensors" => safetensors_file::write(path, &data),
        "npz" => write_npz(path, &data),
        _ => hdf5_file::write(path, &data),
    }
}

/// Fails unless [`save`] knows `path`'s format and its directory exists, so
/// long work can be refused before it starts.
pub fn check_output(path: impl AsRef<Path>) -> Result<(), DataError> {
    let path = path.as_ref();
    match extension(path).as_str() {
        "safetensors" | "npz" => {}
        #[cfg(feature = "hdf5")]
        "h5" | "hdf5" => {}
        #[cfg(not(feature = "hdf5"))]
        "h5" | "hdf5" => return Err(hdf5_file::unavailable(path)),
        _ => return Err(err(path, "unknown output format: expected .safetensors, .npz or .h5")),
    }
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) if !dir.is_dir() => Err(err(path, format!("directory {} does not exist", dir.display()))),
        _ => Ok(()),
    }
}

fn write_npz(path: &Path, data: &PdeDataset) -> Result<(), DataError> {
    let write = |at: &Path| -> Result<(), Box<dyn std::error::Error>> {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(at)?);
        let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, a) in [("x", &data.inputs), ("y", &data.outputs)] {
            zip.start_file(format!("{name}.npy"), stored)?;
            npy::write_to(&mut zip, &a.shape, npy::DType::F32, &a.data)?;
        }
        zip.start_file(NPZ_METADATA, stored)?;
        std::io::Write::write_all(&mut zip, &serde_json::to_vec(&data.metadata)?)?;
        zip.finish()?;
        Ok(())
    };
    crate::output::write_at(path, |at| write(at).map_err(|e| std::io::Error::other(e.to_string())))
        .map_err(|e| err(path, e.to_string()))
}
