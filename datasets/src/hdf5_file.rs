//! HDF5 files (PDEBench's, MATLAB v7.3, and any with named datasets) in pure
//! Rust: read through `hdf5-reader`, written through `hdf5-writer`, with no
//! system library. Only the requested samples are read (hyperslabs along the
//! sample dim, one group per sample for per-seed files), so files larger than
//! memory load in parts.
//!
//! PDEBench layouts recognised by [`load`] without keys:
//! - `nu` `[N, *grid]` and `tensor` `[N, 1, *grid]` (2D Darcy): coefficient → solution;
//! - `tensor` `[N, T, *grid]` (1D Burgers, advection, …): `tensor[:, t_in]` →
//!   `tensor[:, t_out]`;
//! - one group per seed holding `data` `[T, *grid, C]` (2D diffusion–reaction):
//!   `data[t_in]` → `data[t_out]`, channels moved first.
//!
//! `t_in`/`t_out` default to the first and last time step.
//!
//! A file is untrusted input whose sizes are whatever it declares, so before
//! anything is read its rank and dims are checked (with checked arithmetic)
//! against the limits below, walks through groups are bounded, and a panic
//! inside the reader or writer crate becomes a [`DataError`] naming the file.
//! The panic's standard message still reaches stderr: silencing it would take
//! the process-wide panic hook, which every other thread shares. (With
//! `panic = "abort"` a panic still aborts.)

use std::collections::{BTreeMap, HashSet};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use hdf5_reader::error::Error as H5Error;
use hdf5_reader::group::Group;
use hdf5_reader::{ByteOrder, Dataset, Datatype, H5Type, Hdf5File, OpenOptions, SliceInfo, SliceInfoElem};

use crate::dataset::{Array, PdeDataset};
use crate::options::{LoadOptions, LAYOUT_CHANNELS, LAYOUT_KEY};
use crate::{DataError, StoredTensor, Tensors};

/// The most one read may produce: 4 GiB of f32 (selected elements × 4 bytes).
const MAX_READ_BYTES: u64 = 4 << 30;
/// The most one `read_tensors` or `load` may produce in all: 16 GiB of f32.
const MAX_CALL_BYTES: u64 = 16 << 30;
/// Nor more than 1024 × the file's size + 64 MiB (deflate expands ≤ ~1032:1): no GiB of fill values.
const MAX_EXPANSION: u64 = 1024;
/// The 64 MiB that any file may produce, whatever its size (see [`MAX_EXPANSION`]).
const MAX_SMALL_FILE_BYTES: u64 = 64 << 20;
/// The largest decoded chunk the reader allocates: 256 MiB (h5py writes ~1 MiB).
const MAX_CHUNK_BYTES: usize = 256 << 20;
/// The most dims a dataset may have: 32, HDF5's own limit.
const MAX_RANK: usize = 32;
/// The most group levels below the root that `read_tensors` descends: 16.
const MAX_DEPTH: usize = 16;
/// The most groups and datasets one call lists: 100 000.
const MAX_MEMBERS: usize = 100_000;

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// What a panic carried, for the error that replaces it.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// Runs `f` (a call into the HDF5 crates), turning its error and any panic
/// into a [`DataError`] on `path` that starts with `what`.
fn call<T>(path: &Path, what: &str, f: impl FnOnce() -> hdf5_reader::error::Result<T>) -> Result<T, DataError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            // The crate's message often starts with the object's name already.
            let e = e.to_string();
            match e.starts_with(&format!("{what}: ")) {
                true => Err(err(path, e)),
                false => Err(err(path, format!("{what}: {e}"))),
            }
        }
        Err(p) => Err(err(
            path,
            format!(
                "{what}: malformed HDF5 file (the reader panicked: {})",
                panic_message(&*p)
            ),
        )),
    }
}

/// A number of any width and byte order, widened to f32 as it is decoded.
#[derive(Clone, Copy)]
#[repr(transparent)]
struct Widened(f32);

/// The numpy name of a numeric datatype, `None` for the rest (strings,
/// compounds such as MATLAB's complex arrays, references, enums, …).
fn dtype_name(dtype: &Datatype) -> Option<&'static str> {
    Some(match *dtype {
        Datatype::FloatingPoint { size, .. } => match size {
            2 => "float16",
            4 => "float32",
            8 => "float64",
            _ => return None,
        },
        Datatype::FixedPoint { size, signed, .. } => match (size, signed) {
            (1, true) => "int8",
            (1, false) => "uint8",
            (2, true) => "int16",
            (2, false) => "uint16",
            (4, true) => "int32",
            (4, false) => "uint32",
            (8, true) => "int64",
            (8, false) => "uint64",
            _ => return None,
        },
        _ => return None,
    })
}

/// The first `N` bytes of `b` in little-endian order.
fn le<const N: usize>(b: &[u8], order: ByteOrder) -> Option<[u8; N]> {
    let mut a: [u8; N] = b.get(..N)?.try_into().ok()?;
    if order == ByteOrder::BigEndian {
        a.reverse();
    }
    Some(a)
}

/// One element of a numeric datatype, widened to f32.
fn widen(b: &[u8], dtype: &Datatype) -> Option<f32> {
    Some(match *dtype {
        Datatype::FloatingPoint { size: 2, byte_order } => half::f16::from_le_bytes(le(b, byte_order)?).to_f32(),
        Datatype::FloatingPoint { size: 4, byte_order } => f32::from_le_bytes(le(b, byte_order)?),
        Datatype::FloatingPoint { size: 8, byte_order } => f64::from_le_bytes(le(b, byte_order)?) as f32,
        Datatype::FixedPoint { size: 1, signed, .. } => match signed {
            true => *b.first()? as i8 as f32,
            false => *b.first()? as f32,
        },
        Datatype::FixedPoint {
            size: 2,
            signed,
            byte_order,
        } => match signed {
            true => i16::from_le_bytes(le(b, byte_order)?) as f32,
            false => u16::from_le_bytes(le(b, byte_order)?) as f32,
        },
        Datatype::FixedPoint {
            size: 4,
            signed,
            byte_order,
        } => match signed {
            true => i32::from_le_bytes(le(b, byte_order)?) as f32,
            false => u32::from_le_bytes(le(b, byte_order)?) as f32,
        },
        Datatype::FixedPoint {
            size: 8,
            signed,
            byte_order,
        } => match signed {
            true => i64::from_le_bytes(le(b, byte_order)?) as f32,
            false => u64::from_le_bytes(le(b, byte_order)?) as f32,
        },
        _ => return None,
    })
}

fn element_size(dtype: &Datatype) -> Option<usize> {
    match *dtype {
        Datatype::FloatingPoint { size, .. } | Datatype::FixedPoint { size, .. } if dtype_name(dtype).is_some() => {
            Some(size as usize)
        }
        _ => None,
    }
}

fn not_numeric(dtype: &Datatype) -> H5Error {
    H5Error::TypeMismatch {
        expected: "a number".into(),
        actual: format!("{dtype:?}"),
    }
}

impl H5Type for Widened {
    fn hdf5_type() -> Datatype {
        f32::hdf5_type()
    }

    fn from_bytes(bytes: &[u8], dtype: &Datatype) -> hdf5_reader::error::Result<Self> {
        widen(bytes, dtype).map(Widened).ok_or_else(|| not_numeric(dtype))
    }

    fn element_size(dtype: &Datatype) -> usize {
        element_size(dtype).unwrap_or(1)
    }

    fn decode_vec(raw: &[u8], dtype: &Datatype, count: usize) -> Option<hdf5_reader::error::Result<Vec<Self>>> {
        let size = element_size(dtype)?;
        let raw = raw.get(..count.checked_mul(size)?)?;
        Some(
            raw.chunks_exact(size)
                .map(|b| widen(b, dtype).map(Widened).ok_or_else(|| not_numeric(dtype)))
                .collect(),
        )
    }

    fn native_copy_compatible(dtype: &Datatype) -> bool {
        // `Widened` is a transparent f32, so native f32 bytes are its bytes.
        f32::native_copy_compatible(dtype)
    }
}

/// One dim of a read: all of it, a range, or one index (dropped from the shape).
#[derive(Clone)]
enum Sel {
    All,
    Span(Range<usize>),
    Index(usize),
}

/// An open file, with what this call has read so far.
struct File<'p> {
    path: &'p Path,
    h5: Hdf5File,
    produced: u64,
    /// What this call may produce in all (see [`MAX_EXPANSION`]).
    budget: u64,
    members: usize,
}

impl<'p> File<'p> {
    fn open(path: &'p Path) -> Result<Self, DataError> {
        // The crate's own limit is on stored bytes: up to 8 per element we widen to 4.
        let options = OpenOptions::default()
            .with_max_read_bytes(usize::try_from(2 * MAX_READ_BYTES).unwrap_or(usize::MAX))
            .with_max_chunk_bytes(MAX_CHUNK_BYTES);
        let h5 = call(path, "not a readable HDF5 file", || {
            Hdf5File::open_with_options(path, options)
        })?;
        let len = std::fs::metadata(path).map_err(|e| err(path, e.to_string()))?.len();
        Ok(File {
            path,
            h5,
            produced: 0,
            budget: MAX_CALL_BYTES.min(len.saturating_mul(MAX_EXPANSION).saturating_add(MAX_SMALL_FILE_BYTES)),
            members: 0,
        })
    }

    fn err(&self, reason: impl Into<String>) -> DataError {
        err(self.path, reason)
    }

    fn root(&self) -> Result<Group, DataError> {
        call(self.path, "the root group", || self.h5.root_group())
    }

    /// Counts `n` more members listed, within [`MAX_MEMBERS`].
    fn count(&mut self, n: usize) -> Result<(), DataError> {
        self.members = self.members.saturating_add(n);
        if self.members > MAX_MEMBERS {
            return Err(self.err(format!("more than {MAX_MEMBERS} groups and datasets")));
        }
        Ok(())
    }

    /// The names of a group's child groups and datasets, each sorted (the
    /// order libhdf5 lists them in).
    fn names(&mut self, group: &Group) -> Result<(Vec<String>, Vec<String>), DataError> {
        let (mut groups, mut datasets) = call(self.path, group.name(), || group.member_names())?;
        self.count(groups.len() + datasets.len())?;
        groups.sort();
        datasets.sort();
        Ok((groups, datasets))
    }

    /// The dataset at `name` (a path from the root).
    fn dataset(&self, name: &str) -> Result<Dataset, DataError> {
        match catch_unwind(AssertUnwindSafe(|| self.h5.dataset(name))) {
            Ok(Ok(ds)) => Ok(ds),
            Ok(Err(e)) if is_not_found(&e) => Err(self.err(format!("no dataset '{name}'"))),
            Ok(Err(e)) => Err(self.err(format!("{name}: {e}"))),
            Err(p) => Err(self.err(format!(
                "{name}: malformed HDF5 file (the reader panicked: {})",
                panic_message(&*p)
            ))),
        }
    }

    /// A dataset's dims, checked against [`MAX_RANK`] and (for its sample dim)
    /// a minimum rank, as usize.
    fn shape(&self, ds: &Dataset, name: &str, min_rank: usize) -> Result<Vec<usize>, DataError> {
        let dims = call(self.path, name, || Ok(ds.shape().to_vec()))?;
        if dims.len() > MAX_RANK || dims.len() < min_rank {
            return Err(self.err(format!(
                "'{name}' has {} dims: expected {min_rank} to {MAX_RANK}",
                dims.len()
            )));
        }
        dims.iter()
            .map(|&d| usize::try_from(d).map_err(|_| self.err(format!("'{name}' has a dim of {d}"))))
            .collect()
    }

    /// `ds[sel…]` widened to f32, in C order, with the shape of the kept dims;
    /// its size is checked against the limits before anything is read.
    fn read(&mut self, ds: &Dataset, name: &str, sel: &[Sel]) -> Result<Array, DataError> {
        let dtype = call(self.path, name, || Ok(ds.dtype().clone()))?;
        if dtype_name(&dtype).is_none() {
            return Err(self.err(format!("'{name}' holds {dtype:?}, not numbers")));
        }
        let dims = self.shape(ds, name, 0)?;
        if sel.len() != dims.len() {
            return Err(self.err(format!("'{name}' has shape {dims:?}: {} dims expected", sel.len())));
        }
        let mut shape = Vec::new();
        let mut elements: u64 = 1;
        let mut slices = Vec::with_capacity(dims.len());
        for (s, &n) in sel.iter().zip(&dims) {
            let (count, elem) = match s {
                Sel::All => (
                    Some(n),
                    SliceInfoElem::Slice {
                        start: 0,
                        end: n as u64,
                        step: 1,
                    },
                ),
                Sel::Span(r) if r.start <= r.end && r.end <= n => (
                    Some(r.len()),
                    SliceInfoElem::Slice {
                        start: r.start as u64,
                        end: r.end as u64,
                        step: 1,
                    },
                ),
                Sel::Index(i) if *i < n => (None, SliceInfoElem::Index(*i as u64)),
                _ => return Err(self.err(format!("'{name}' has shape {dims:?}: selection out of range"))),
            };
            if let Some(c) = count {
                shape.push(c);
                elements = elements.saturating_mul(c as u64);
            }
            slices.push(elem);
        }
        let bytes = elements.saturating_mul(4);
        if bytes > MAX_READ_BYTES {
            return Err(self.err(format!(
                "reading '{name}' {shape:?} would take {bytes} bytes, over the limit of {MAX_READ_BYTES}"
            )));
        }
        let produced = self.produced.saturating_add(bytes);
        if produced > self.budget {
            return Err(self.err(format!(
                "reading '{name}' {shape:?} would bring this file's reads to {produced} bytes, over its limit of {} \
                 (the least of {MAX_CALL_BYTES} and 64 MiB + {MAX_EXPANSION} × the file's size)",
                self.budget
            )));
        }
        self.produced = produced;
        let whole = sel.iter().all(|s| matches!(s, Sel::All));
        let values = call(self.path, name, || {
            let a = match whole {
                true => ds.read_array::<Widened>()?,
                false => ds.read_slice::<Widened>(&SliceInfo { selections: slices })?,
            };
            // A fresh array's buffer is its values in C order: taken, not copied.
            let n = a.len();
            let (raw, offset) = match a.is_standard_layout() {
                true => a.into_raw_vec_and_offset(),
                false => (a.iter().copied().collect(), None),
            };
            if raw.len() != n || offset.unwrap_or(0) != 0 {
                return Err(H5Error::InvalidData(format!("{n} values decoded into {}", raw.len())));
            }
            Ok(raw.into_iter().map(|w| w.0).collect::<Vec<f32>>())
        })?;
        Array::new(shape, values).map_err(|e| self.err(format!("'{name}': {e}")))
    }

    /// Reads `[range, *rest]` of a dataset whose dim 0 is the sample.
    fn samples_of(&mut self, ds: &Dataset, name: &str, range: &Range<usize>) -> Result<Array, DataError> {
        let shape = self.shape(ds, name, 1)?;
        check_range(self.path, range, shape[0])?;
        let sel: Vec<Sel> = std::iter::once(Sel::Span(range.clone()))
            .chain(shape[1..].iter().map(|_| Sel::All))
            .collect();
        self.read(ds, name, &sel)
    }

    /// Every numeric dataset below `group`, named by path; a group reached
    /// twice (linked twice, or a cycle) is read once.
    fn collect(
        &mut self,
        group: &Group,
        prefix: &str,
        depth: usize,
        seen: &mut HashSet<u64>,
        out: &mut BTreeMap<String, StoredTensor>,
    ) -> Result<(), DataError> {
        if depth > MAX_DEPTH {
            return Err(self.err(format!("groups nested deeper than {MAX_DEPTH} levels at '{prefix}'")));
        }
        if !seen.insert(group.address()) {
            return Ok(());
        }
        let what = if prefix.is_empty() { "/" } else { prefix };
        let (groups, datasets) = call(self.path, what, || group.members())?;
        self.count(groups.len() + datasets.len())?;
        for ds in &datasets {
            let name = format!("{prefix}{}", ds.name());
            let dtype = call(self.path, &name, || Ok(ds.dtype().clone()))?;
            // Strings, compounds, references and enums are not fields.
            let Some(dtype) = dtype_name(&dtype) else { continue };
            let sel = vec![Sel::All; self.shape(ds, &name, 0)?.len()];
            let array = self.read(ds, &name, &sel)?;
            out.insert(
                name,
                StoredTensor {
                    dtype: dtype.into(),
                    array,
                },
            );
        }
        for g in &groups {
            self.collect(g, &format!("{prefix}{}/", g.name()), depth + 1, seen, out)?;
        }
        Ok(())
    }

    /// The metadata attribute of a file we wrote (empty for others).
    fn metadata(&self) -> BTreeMap<String, String> {
        let json = catch_unwind(AssertUnwindSafe(|| {
            self.h5.root_group()?.attribute(METADATA_ATTR)?.read_string()
        }));
        match json {
            Ok(Ok(s)) => serde_json::from_str(&s).unwrap_or_default(),
            _ => BTreeMap::new(),
        }
    }
}

fn is_not_found(e: &H5Error) -> bool {
    match e {
        H5Error::DatasetNotFound(_) | H5Error::GroupNotFound(_) => true,
        H5Error::Context { source, .. } => is_not_found(source),
        _ => false,
    }
}

/// Every dataset of the file (recursively, named by path), widened to f32.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<Tensors, DataError> {
    let path = path.as_ref();
    let mut file = File::open(path)?;
    let root = file.root()?;
    let mut out = BTreeMap::new();
    file.collect(&root, "", 0, &mut HashSet::new(), &mut out)?;
    Ok((out, file.metadata()))
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

/// A dataset from an HDF5 file: the named keys (`[N, *grid]`, or `[N, C, *grid]`
/// with `channel_dim`), else one of the PDEBench layouts above.
pub fn load(path: impl AsRef<Path>, options: &LoadOptions) -> Result<PdeDataset, DataError> {
    let path = path.as_ref();
    let mut file = File::open(path)?;
    let root = file.root()?;
    let (groups, datasets) = file.names(&root)?;
    let has = |k: &str| datasets.iter().any(|n| n == k);
    let (t_in, t_out) = (options.time.map(|t| t.0), options.time.map(|t| t.1));
    let metadata = file.metadata();
    let ours = metadata.get(LAYOUT_KEY).map(String::as_str) == Some(LAYOUT_CHANNELS);
    let keys = match (&options.input_key, &options.output_key) {
        (None, None) if ours => (Some("x".to_string()), Some("y".to_string())),
        (x, y) => (x.clone(), y.clone()),
    };
    let channel_dim = options.channel_dim.unwrap_or(ours);
    let (inputs, outputs) = match (&keys.0, &keys.1) {
        (Some(xk), Some(yk)) => {
            let (x, y) = (file.dataset(xk)?, file.dataset(yk)?);
            let range = options.samples.clone().unwrap_or(0..file.shape(&x, xk, 1)?[0]);
            let with_channels = |mut a: Array| {
                if !channel_dim {
                    a.shape.insert(1, 1);
                }
                a
            };
            (
                with_channels(file.samples_of(&x, xk, &range)?),
                with_channels(file.samples_of(&y, yk, &range)?),
            )
        }
        (None, None) if has("nu") && has("tensor") => {
            let (nu, u) = (file.dataset("nu")?, file.dataset("tensor")?);
            let range = options.samples.clone().unwrap_or(0..file.shape(&nu, "nu", 1)?[0]);
            let mut x = file.samples_of(&nu, "nu", &range)?;
            x.shape.insert(1, 1);
            (x, file.samples_of(&u, "tensor", &range)?)
        }
        (None, None) if has("tensor") => {
            let u = file.dataset("tensor")?;
            let shape = file.shape(&u, "tensor", 0)?;
            if shape.len() < 3 {
                return Err(err(
                    path,
                    format!("'tensor' has shape {shape:?}: expected [N, T, *grid]"),
                ));
            }
            let range = options.samples.clone().unwrap_or(0..shape[0]);
            check_range(path, &range, shape[0])?;
            let mut at = |t: usize| -> Result<Array, DataError> {
                let sel: Vec<Sel> = [Sel::Span(range.clone()), Sel::Index(t)]
                    .into_iter()
                    .chain(shape[2..].iter().map(|_| Sel::All))
                    .collect();
                let mut a = file.read(&u, "tensor", &sel)?;
                a.shape.insert(1, 1);
                Ok(a)
            };
            (
                at(step(path, t_in, 0, shape[1])?)?,
                at(step(path, t_out, shape[1].saturating_sub(1), shape[1])?)?,
            )
        }
        (None, None) => per_seed(&mut file, &root, &groups, &datasets, options)?,
        _ => return Err(err(path, "name both the input and the output dataset, or neither")),
    };
    let mut data = PdeDataset::new(inputs, outputs).map_err(|e| err(path, e.to_string()))?;
    data.metadata = metadata;
    data.metadata.insert("source".into(), path.display().to_string());
    if options.stride == 1 {
        return Ok(data);
    }
    let n = data.len();
    data.select(0..n, options.stride)
}

/// PDEBench's per-seed groups, each with `data` `[T, *grid, C]`.
fn per_seed(
    file: &mut File,
    root: &Group,
    groups: &[String],
    datasets: &[String],
    options: &LoadOptions,
) -> Result<(Array, Array), DataError> {
    let path = file.path;
    let mut seeds = Vec::new();
    for name in groups {
        let ds = call(path, name, || match root.group(name)?.dataset("data") {
            Ok(ds) => Ok(Some(ds)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        })?;
        file.count(1)?;
        seeds.extend(ds.map(|ds| (name, ds)));
    }
    if seeds.is_empty() {
        let mut names: Vec<&String> = groups.iter().chain(datasets).collect();
        names.sort();
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
    for (name, ds) in &seeds[range.clone()] {
        let s = file.shape(ds, &format!("{name}/data"), 0)?;
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
            (step(path, t_out, s[0].saturating_sub(1), s[0])?, &mut ys),
        ] {
            let sel: Vec<Sel> = std::iter::once(Sel::Index(t))
                .chain(s[1..].iter().map(|_| Sel::All))
                .collect();
            out.push(file.read(ds, &format!("{name}/data"), &sel)?);
        }
    }
    if shape.is_empty() {
        // No seed selected: nothing to stack, and no shape to give it.
        return Err(err(path, format!("samples {range:?}: no seed selected")));
    }
    // [*grid, C] per sample → [N, C, *grid].
    let grid = &shape[1..shape.len() - 1];
    let channels = shape[shape.len() - 1];
    let points: usize = grid.iter().product();
    let stack = |parts: Vec<Array>| -> Result<Array, DataError> {
        let mut data = crate::buffer(parts.len() * points * channels).map_err(|m| err(path, m))?;
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
///
/// The file is encoded in memory first (hdf5-writer has no streaming API), so
/// writing takes about twice the data's size beside it.
pub fn write(path: impl AsRef<Path>, data: &PdeDataset) -> Result<(), DataError> {
    use hdf5_writer::{AttributeBuilder, DatasetBuilder, Hdf5Builder, WriteOptions};
    let path = path.as_ref();
    let encode = || -> Result<Vec<u8>, String> {
        let mut builder = Hdf5Builder::new();
        for (name, a) in [("x", &data.inputs), ("y", &data.outputs)] {
            let shape: Vec<u64> = a.shape.iter().map(|&n| n as u64).collect();
            builder = builder.dataset(DatasetBuilder::typed_data(name, shape, &a.data).map_err(|e| e.to_string())?);
        }
        // A one-element variable-length UTF-8 string (hdf5-writer writes no
        // scalar ones); readers take either.
        let json = serde_json::to_string(&data.metadata).expect("strings");
        let metadata = AttributeBuilder::vlen_strings(METADATA_ATTR, &[json]).map_err(|e| e.to_string())?;
        builder
            .attribute(metadata)
            .into_plan()
            .and_then(|plan| plan.encode(WriteOptions::default()))
            .map_err(|e| e.to_string())
    };
    catch_unwind(AssertUnwindSafe(encode))
        .unwrap_or_else(|p| Err(format!("the HDF5 writer panicked: {}", panic_message(&*p))))
        .and_then(|bytes| crate::output::write_bytes(path, &bytes).map_err(|e| e.to_string()))
        .map_err(|e| err(path, e))
}
