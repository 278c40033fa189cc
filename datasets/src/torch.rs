//! PyTorch `.pt` files as neuraloperator writes them: `torch.save` of a dict of
//! tensors, a zip holding a pickle (`*/data.pkl`) and one raw file per storage
//! (`*/data/<key>`). The pickle is parsed by candle-core's unpickler; each
//! tensor is then read from its storage with its own offset and strides (the
//! neuraloperator Darcy files store Fortran-ordered views) and widened to f32
//! from any of torch's storage types, bool included.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use candle_core::pickle::{Object, Stack};

use crate::dataset::Array;
use crate::{DataError, StoredTensor};

fn err(path: &Path, reason: impl Into<String>) -> DataError {
    DataError::File {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// A storage type: its torch dtype name, bytes per element, and decoder.
struct StorageType {
    dtype: &'static str,
    size: usize,
    decode: fn(&[u8]) -> f32,
}

fn storage_type(class: &str) -> Option<StorageType> {
    let t = |dtype, size, decode| Some(StorageType { dtype, size, decode });
    match class {
        "FloatStorage" => t("float32", 4, |b| f32::from_le_bytes(b.try_into().unwrap())),
        "DoubleStorage" => t("float64", 8, |b| f64::from_le_bytes(b.try_into().unwrap()) as f32),
        "HalfStorage" => t("float16", 2, |b| {
            half::f16::from_le_bytes(b.try_into().unwrap()).to_f32()
        }),
        "BFloat16Storage" => t("bfloat16", 2, |b| {
            half::bf16::from_le_bytes(b.try_into().unwrap()).to_f32()
        }),
        "ByteStorage" => t("uint8", 1, |b| b[0] as f32),
        "CharStorage" => t("int8", 1, |b| b[0] as i8 as f32),
        "ShortStorage" => t("int16", 2, |b| i16::from_le_bytes(b.try_into().unwrap()) as f32),
        "IntStorage" => t("int32", 4, |b| i32::from_le_bytes(b.try_into().unwrap()) as f32),
        "LongStorage" => t("int64", 8, |b| i64::from_le_bytes(b.try_into().unwrap()) as f32),
        "BoolStorage" => t("bool", 1, |b| (b[0] != 0) as u8 as f32),
        _ => None,
    }
}

/// Where a tensor's values are: its storage and the view into it.
struct TensorRef {
    storage_key: String,
    storage_class: String,
    storage_len: usize,
    offset: usize,
    shape: Vec<usize>,
    strides: Vec<usize>,
}

fn usizes(o: Object) -> Option<Vec<usize>> {
    match o {
        Object::Tuple(v) | Object::List(v) => v.into_iter().map(usize_of).collect(),
        _ => None,
    }
}

fn usize_of(o: Object) -> Option<usize> {
    match o {
        Object::Int(i) => usize::try_from(i).ok(),
        Object::Long(i) => usize::try_from(i).ok(),
        _ => None,
    }
}

/// `_rebuild_tensor_v2(storage, offset, size, stride, …)`, possibly wrapped in
/// `_rebuild_parameter(tensor, …)`.
fn tensor_ref(o: Object) -> Option<TensorRef> {
    let Object::Reduce { callable, args } = o else {
        return None;
    };
    let Object::Class { class_name, .. } = *callable else {
        return None;
    };
    let Object::Tuple(mut args) = *args else {
        return None;
    };
    if class_name == "_rebuild_parameter" {
        return tensor_ref(args.into_iter().next()?);
    }
    if class_name != "_rebuild_tensor_v2" || args.len() < 4 {
        return None;
    }
    let strides = usizes(args.remove(3))?;
    let shape = usizes(args.remove(2))?;
    let offset = usize_of(args.remove(1))?;
    let Object::PersistentLoad(storage) = args.remove(0) else {
        return None;
    };
    // ('storage', <class torch.XStorage>, key, location, size)
    let Object::Tuple(mut storage) = *storage else {
        return None;
    };
    if storage.len() < 5 {
        return None;
    }
    let storage_len = usize_of(storage.remove(4))?;
    let Object::Unicode(storage_key) = storage.remove(2) else {
        return None;
    };
    let Object::Class { class_name, .. } = storage.remove(1) else {
        return None;
    };
    (shape.len() == strides.len()).then_some(TensorRef {
        storage_key,
        storage_class: class_name,
        storage_len,
        offset,
        shape,
        strides,
    })
}

/// Every tensor of a `.pt` file holding a dict of tensors (entries that are
/// not tensors are skipped), by key.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, StoredTensor>, DataError> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| err(path, e.to_string()))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| err(path, format!("not a torch.save zip archive ({e})")))?;
    let pickle_name = (0..zip.len())
        .filter_map(|i| zip.name_for_index(i).map(str::to_string))
        .find(|n| n.ends_with("data.pkl"))
        .ok_or_else(|| err(path, "no data.pkl in the archive"))?;
    let prefix = pickle_name.trim_end_matches("data.pkl").to_string();
    let mut pickle = Vec::new();
    zip.by_name(&pickle_name)
        .and_then(|mut f| f.read_to_end(&mut pickle).map_err(Into::into))
        .map_err(|e| err(path, format!("{pickle_name}: {e}")))?;
    let mut stack = Stack::empty();
    stack
        .read_loop(&mut std::io::Cursor::new(&pickle))
        .map_err(|e| err(path, format!("unreadable pickle: {e}")))?;
    let root = stack
        .finalize()
        .map_err(|e| err(path, format!("unreadable pickle: {e}")))?;
    let Object::Dict(entries) = root else {
        return Err(err(path, "expected a dict of tensors at the top level"));
    };
    let mut out = BTreeMap::new();
    for (key, value) in entries {
        let Object::Unicode(key) = key else { continue };
        let Some(t) = tensor_ref(value) else { continue };
        let tensor = read_tensor(path, &mut zip, &prefix, &key, t)?;
        out.insert(key, tensor);
    }
    Ok(out)
}

fn read_tensor<R: std::io::Read + std::io::Seek>(
    path: &Path,
    zip: &mut zip::ZipArchive<R>,
    prefix: &str,
    key: &str,
    t: TensorRef,
) -> Result<StoredTensor, DataError> {
    let ty = storage_type(&t.storage_class)
        .ok_or_else(|| err(path, format!("{key}: unsupported storage type {}", t.storage_class)))?;
    let entry = format!("{prefix}data/{}", t.storage_key);
    let mut bytes = Vec::new();
    zip.by_name(&entry)
        .and_then(|mut f| f.read_to_end(&mut bytes).map_err(Into::into))
        .map_err(|e| err(path, format!("{key}: storage {entry}: {e}")))?;
    if bytes.len() < t.storage_len * ty.size {
        return Err(err(
            path,
            format!(
                "{key}: storage {entry} holds {} bytes, its {} {} elements need {} (truncated file?)",
                bytes.len(),
                t.storage_len,
                ty.dtype,
                t.storage_len * ty.size
            ),
        ));
    }
    let count: usize = t.shape.iter().product();
    let last = t.offset
        + t.shape
            .iter()
            .zip(&t.strides)
            .map(|(&n, &s)| n.saturating_sub(1) * s)
            .sum::<usize>();
    if count > 0 && last >= t.storage_len {
        return Err(err(
            path,
            format!(
                "{key}: a view of shape {:?}, strides {:?}, offset {} reaches element {last} of a {}-element storage",
                t.shape, t.strides, t.offset, t.storage_len
            ),
        ));
    }
    let mut data = Vec::with_capacity(count);
    let mut index = vec![0usize; t.shape.len()];
    for _ in 0..count {
        let at = t.offset + index.iter().zip(&t.strides).map(|(i, s)| i * s).sum::<usize>();
        data.push((ty.decode)(&bytes[at * ty.size..][..ty.size]));
        // Next index in C order.
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < t.shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Ok(StoredTensor {
        dtype: ty.dtype.to_string(),
        array: Array::new(t.shape, data)?,
    })
}
