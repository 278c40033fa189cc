//! HDF5 files (PDEBench's, and any with named datasets) through the `hdf5`
//! crate family (hdf5-metno on the system's libhdf5). Only the requested
//! samples are read (hyperslabs along the sample dim, one group per sample for
//! per-seed files), so files larger than memory load in parts.
//!
//! PDEBench layouts recognised by [`load`] without keys:
//! - `nu` `[N, *grid]` and `tensor` `[N, 1, *grid]` (2D Darcy): coefficient → solution;
//! - `tensor` `[N, T, *grid]` (1D Burgers, advection, …): `tensor[:, t_in]` →
//!   `tensor[:, t_out]`;
//! - one group per seed holding `data` `[T, *grid, C]` (2D diffusion–reaction):
//!   `data[t_in]` → `data[t_out]`, channels moved first.
//!
//! `t_in`/`t_out` default to the first and last time step.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use hdf5_metno::{Dataset, File, Group};
use hdf5_metno::{Hyperslab, Selection, SliceOrIndex};

use crate::dataset::{Array, PdeDataset};
use crate::load::LoadOptions;
use crate::{DataError, StoredTensor, Tensors};

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

fn open(path: &Path) -> Result<File, DataError> {
    File::open(path).map_err(|e| err(path, format!("not a readable HDF5 file ({e})")))
}

/// Every dataset of the file (recursively, named by path), widened to f32.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<Tensors, DataError> {
    let path = path.as_ref();
    let file = open(path)?;
    let mut out = BTreeMap::new();
    collect(path, &file, "", &mut out)?;
    Ok((out, metadata(&file)))
}

fn collect(
    path: &Path,
    group: &Group,
    prefix: &str,
    out: &mut BTreeMap<String, StoredTensor>,
) -> Result<(), DataError> {
    let names = group.member_names().map_err(|e| err(path, e.to_string()))?;
    for name in names {
        let full = format!("{prefix}{name}");
        if let Ok(ds) = group.dataset(&name) {
            let dtype = ds
                .dtype()
                .and_then(|t| t.to_descriptor())
                .map(|d| format!("{d:?}").to_lowercase())
                .unwrap_or_else(|_| "unknown".into());
            // Strings and compound types are not fields.
            let Ok(data) = ds.read_raw::<f32>() else { continue };
            out.insert(
                full,
                StoredTensor {
                    dtype,
                    array: Array::new(ds.shape(), data)?,
                },
            );
        } else if let Ok(g) = group.group(&name) {
            collect(path, &g, &format!("{full}/"), out)?;
        }
    }
    Ok(())
}

/// `ds[selection…]` as f32 values in C order, with the shape of the kept dims.
fn read_part(path: &Path, ds: &Dataset, slices: Vec<SliceOrIndex>) -> Result<Array, DataError> {
    let shape: Vec<usize> = slices
        .iter()
        .filter_map(|s| match s {
            SliceOrIndex::SliceCount { count, .. } => Some(*count),
            _ => None,
        })
        .collect();
    let selection = Selection::from(Hyperslab::from(slices));
    let values: ndarray::ArrayD<f32> = ds
        .read_slice(selection)
        .map_err(|e| err(path, format!("{}: {e}", ds.name())))?;
    Array::new(shape, values.iter().copied().collect())
}

fn all(n: usize) -> SliceOrIndex {
    SliceOrIndex::SliceCount {
        start: 0,
        step: 1,
        count: n,
        block: 1,
    }
}

fn span(r: &Range<usize>) -> SliceOrIndex {
    SliceOrIndex::SliceCount {
        start: r.start,
        step: 1,
        count: r.len(),
        block: 1,
    }
}

fn dataset(path: &Path, file: &Group, name: &str) -> Result<Dataset, DataError> {
    file.dataset(name)
        .map_err(|_| err(path, format!("no dataset '{name}'")))
}

fn check_range(path: &Path, samples: &Range<usize>, n: usize) -> Result<(), DataError> {
    if samples.start > samples.end || samples.end > n {
        return Err(err(path, format!("samples {samples:?} out of the {n} there are")));
    }
    Ok(())
}

/// A time step of `t` steps: `chosen` or the default, checked.
fn step(path: &Path, chosen: Option<usize>, default: usize, t: usize) -> Result<usize, DataError> {
    let s = chosen.unwrap_or(default);
    if s >= t {
        return Err(err(path, format!("time step {s} of a trajectory of {t}")));
    }
    Ok(s)
}

/// Reads `[range, *rest]` of a dataset whose dim 0 is the sample.
fn samples_of(path: &Path, ds: &Dataset, range: &Range<usize>) -> Result<Array, DataError> {
    let shape = ds.shape();
    check_range(path, range, shape[0])?;
    let slices = std::iter::once(span(range))
        .chain(shape[1..].iter().map(|&n| all(n)))
        .collect();
    read_part(path, ds, slices)
}

/// A dataset from an HDF5 file: the named keys (`[N, *grid]`, or `[N, C, *grid]`
/// with `channel_dim`), else one of the PDEBench layouts above.
pub fn load(path: impl AsRef<Path>, options: &LoadOptions) -> Result<PdeDataset, DataError> {
    let path = path.as_ref();
    let file = open(path)?;
    let names = file.member_names().map_err(|e| err(path, e.to_string()))?;
    let has = |k: &str| names.iter().any(|n| n == k);
    let (t_in, t_out) = (options.time.map(|t| t.0), options.time.map(|t| t.1));
    let ours = metadata(&file).get(crate::load::LAYOUT_KEY).map(String::as_str) == Some(crate::load::LAYOUT_CHANNELS);
    let keys = match (&options.input_key, &options.output_key) {
        (None, None) if ours => (Some("x".to_string()), Some("y".to_string())),
        (x, y) => (x.clone(), y.clone()),
    };
    let channel_dim = options.channel_dim.unwrap_or(ours);
    let (inputs, outputs) = match (&keys.0, &keys.1) {
        (Some(xk), Some(yk)) => {
            let (x, y) = (dataset(path, &file, xk)?, dataset(path, &file, yk)?);
            let range = options.samples.clone().unwrap_or(0..x.shape()[0]);
            let with_channels = |mut a: Array| {
                if !channel_dim {
                    a.shape.insert(1, 1);
                }
                a
            };
            (
                with_channels(samples_of(path, &x, &range)?),
                with_channels(samples_of(path, &y, &range)?),
            )
        }
        (None, None) if has("nu") && has("tensor") => {
            let (nu, u) = (dataset(path, &file, "nu")?, dataset(path, &file, "tensor")?);
            let range = options.samples.clone().unwrap_or(0..nu.shape()[0]);
            let mut x = samples_of(path, &nu, &range)?;
            x.shape.insert(1, 1);
            (x, samples_of(path, &u, &range)?)
        }
        (None, None) if has("tensor") => {
            let u = dataset(path, &file, "tensor")?;
            let shape = u.shape();
            if shape.len() < 3 {
                return Err(err(
                    path,
                    format!("'tensor' has shape {shape:?}: expected [N, T, *grid]"),
                ));
            }
            let range = options.samples.clone().unwrap_or(0..shape[0]);
            check_range(path, &range, shape[0])?;
            let at = |t: usize| -> Result<Array, DataError> {
                let slices = [span(&range), SliceOrIndex::Index(t)]
                    .into_iter()
                    .chain(shape[2..].iter().map(|&n| all(n)))
                    .collect();
                let mut a = read_part(path, &u, slices)?;
                a.shape.insert(1, 1);
                Ok(a)
            };
            (
                at(step(path, t_in, 0, shape[1])?)?,
                at(step(path, t_out, shape[1] - 1, shape[1])?)?,
            )
        }
        (None, None) => per_seed(path, &file, &names, options)?,
        _ => return Err(err(path, "name both the input and the output dataset, or neither")),
    };
    let mut data = PdeDataset::new(inputs, outputs).map_err(|e| err(path, e.to_string()))?;
    data.metadata = metadata(&file);
    data.metadata.insert("source".into(), path.display().to_string());
    if options.stride == 1 {
        return Ok(data);
    }
    let n = data.len();
    data.select(0..n, options.stride)
}

/// PDEBench's per-seed groups, each with `data` `[T, *grid, C]`.
fn per_seed(path: &Path, file: &File, names: &[String], options: &LoadOptions) -> Result<(Array, Array), DataError> {
    let seeds: Vec<&String> = names
        .iter()
        .filter(|n| file.group(n).is_ok_and(|g| g.dataset("data").is_ok()))
        .collect();
    if seeds.is_empty() {
        return Err(err(
            path,
            format!(
                "no PDEBench layout (nu + tensor, tensor, or groups with 'data') among {names:?}; name the input and output datasets"
            ),
        ));
    }
    let range = options.samples.clone().unwrap_or(0..seeds.len());
    check_range(path, &range, seeds.len())?;
    let (mut xs, mut ys, mut shape) = (Vec::new(), Vec::new(), Vec::new());
    for name in &seeds[range.clone()] {
        let ds = dataset(path, &file.group(name).expect("listed above"), "data")?;
        let s = ds.shape();
        if s.len() < 3 || (!shape.is_empty() && s != shape) {
            return Err(err(
                path,
                format!("{name}/data has shape {s:?}: expected one [T, *grid, C] for every seed"),
            ));
        }
        shape = s.clone();
        let (t_in, t_out) = (options.time.map(|t| t.0), options.time.map(|t| t.1));
        for (t, out) in [
            (step(path, t_in, 0, s[0])?, &mut xs),
            (step(path, t_out, s[0] - 1, s[0])?, &mut ys),
        ] {
            let slices = std::iter::once(SliceOrIndex::Index(t))
                .chain(s[1..].iter().map(|&n| all(n)))
                .collect();
            out.push(read_part(path, &ds, slices)?);
        }
    }
    // [*grid, C] per sample → [N, C, *grid].
    let grid = &shape[1..shape.len() - 1];
    let channels = shape[shape.len() - 1];
    let points: usize = grid.iter().product();
    let stack = |parts: Vec<Array>| -> Result<Array, DataError> {
        let mut data = Vec::with_capacity(parts.len() * points * channels);
        for a in &parts {
            for c in 0..channels {
                data.extend((0..points).map(|p| a.data[p * channels + c]));
            }
        }
        let mut shape = vec![parts.len(), channels];
        shape.extend(grid);
        Array::new(shape, data)
    };
    Ok((stack(xs)?, stack(ys)?))
}

/// Metadata attribute of the files we write (a JSON object).
const METADATA_ATTR: &str = "metadata";

/// Writes `data` as datasets `x` and `y` (f32), its metadata as a JSON string
/// attribute, atomically (a temporary file renamed into place).
pub fn write(path: impl AsRef<Path>, data: &PdeDataset) -> Result<(), DataError> {
    use hdf5_metno::types::VarLenUnicode;
    let path = path.as_ref();
    let tmp = crate::safetensors_file::tmp_path(path);
    let write = || -> hdf5_metno::Result<()> {
        let file = File::create(&tmp)?;
        for (name, a) in [("x", &data.inputs), ("y", &data.outputs)] {
            file.new_dataset::<f32>()
                .shape(a.shape.clone())
                .create(name)?
                .write_raw(&a.data)?;
        }
        let json: VarLenUnicode = serde_json::to_string(&data.metadata)
            .expect("strings")
            .parse()
            .map_err(|e| hdf5_metno::Error::from(format!("{e}")))?;
        file.new_attr::<VarLenUnicode>()
            .create(METADATA_ATTR)?
            .write_scalar(&json)?;
        file.close()
    };
    write()
        .map_err(|e| e.to_string())
        .and_then(|_| std::fs::rename(&tmp, path).map_err(|e| e.to_string()))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            err(path, e)
        })
}

/// The metadata attribute of a file we wrote (empty for others).
fn metadata(file: &File) -> BTreeMap<String, String> {
    file.attr(METADATA_ATTR)
        .and_then(|a| a.read_scalar::<hdf5_metno::types::VarLenUnicode>())
        .ok()
        .and_then(|s| serde_json::from_str(s.as_str()).ok())
        .unwrap_or_default()
}
