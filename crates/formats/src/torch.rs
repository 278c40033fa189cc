//! PyTorch's `torch.save` files: a zip holding a pickle (`*/data.pkl`) and one
//! raw file per storage (`*/data/<key>`). The pickle becomes a [`Value`]:
//! plain data, tensors read from their storages with their own offsets and
//! strides (views, Fortran-ordered ones included) and widened to f32, real or
//! complex, and the globals this reader knows by name ([`KNOWN_GLOBALS`]);
//! any other global or call is refused, naming it. Zip entries are read
//! within a [`Budget`] and views are checked against their storage.

use std::io::{Read, Seek};

use candle_core::pickle::Object;

use crate::budget::{buffer, Budget};
use crate::pickle::unpickle;

/// A tensor's values widened to f32, in C order; complex values as (re, im)
/// pairs, `2 × shape` values in all.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// torch's name of the stored dtype (`float32`, `complex64`, …).
    pub dtype: &'static str,
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
    pub complex: bool,
}

/// What a pickle holds, as far as this reader understands it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// A list, tuple or `torch.Size`.
    List(Vec<Value>),
    /// A dict or `OrderedDict`, its entries in no set order (candle's
    /// unpickler reverses each batch); a key that repeats names the dict's
    /// own item first, then an attribute of an `OrderedDict` (a state dict's
    /// `_metadata`).
    Dict(Vec<(Value, Value)>),
    /// A function or class of [`KNOWN_GLOBALS`], as `module.name`.
    Global(String),
    Tensor(Tensor),
}

/// The globals a value may name: activations and neuraloperator's modules,
/// as neuraloperator's init kwargs hold them.
pub const KNOWN_GLOBALS: &[&str] = &[
    "torch._C._nn.gelu",
    "torch._C._nn.silu",
    "torch.nn.functional.gelu",
    "torch.nn.functional.relu",
    "torch.nn.functional.silu",
    "torch.nn.functional.tanh",
    "torch.nn.functional.sigmoid",
    "torch.relu",
    "torch.tanh",
    "torch.sigmoid",
    "neuralop.layers.spectral_convolution.SpectralConv",
];

impl Value {
    /// The value under string key `key` of a dict (its own item, where an
    /// attribute repeats the key).
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(entries) => entries
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A storage type: its torch dtype name, bytes per lane, lanes (2 for
/// complex), and the decoder of a lane.
struct StorageType {
    dtype: &'static str,
    size: usize,
    lanes: usize,
    decode: fn(&[u8]) -> f32,
}

fn storage_type(class: &str) -> Option<StorageType> {
    let t = |dtype, size, lanes, decode| {
        Some(StorageType {
            dtype,
            size,
            lanes,
            decode,
        })
    };
    let f32_of = |b: &[u8]| f32::from_le_bytes(b.try_into().unwrap());
    let f64_of = |b: &[u8]| f64::from_le_bytes(b.try_into().unwrap()) as f32;
    let f16_of = |b: &[u8]| half::f16::from_le_bytes(b.try_into().unwrap()).to_f32();
    match class {
        "FloatStorage" => t("float32", 4, 1, f32_of),
        "DoubleStorage" => t("float64", 8, 1, f64_of),
        "HalfStorage" => t("float16", 2, 1, f16_of),
        "BFloat16Storage" => t("bfloat16", 2, 1, |b| {
            half::bf16::from_le_bytes(b.try_into().unwrap()).to_f32()
        }),
        "ComplexFloatStorage" => t("complex64", 4, 2, f32_of),
        "ComplexDoubleStorage" => t("complex128", 8, 2, f64_of),
        "ComplexHalfStorage" => t("complex32", 2, 2, f16_of),
        "ByteStorage" => t("uint8", 1, 1, |b| b[0] as f32),
        "CharStorage" => t("int8", 1, 1, |b| b[0] as i8 as f32),
        "ShortStorage" => t("int16", 2, 1, |b| i16::from_le_bytes(b.try_into().unwrap()) as f32),
        "IntStorage" => t("int32", 4, 1, |b| i32::from_le_bytes(b.try_into().unwrap()) as f32),
        "LongStorage" => t("int64", 8, 1, |b| i64::from_le_bytes(b.try_into().unwrap()) as f32),
        "BoolStorage" => t("bool", 1, 1, |b| (b[0] != 0) as u8 as f32),
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

/// The arguments of `_rebuild_tensor_v2(storage, offset, size, stride, …)`.
fn tensor_ref(mut args: Vec<Object>) -> Option<TensorRef> {
    if args.len() < 4 {
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

/// An open `torch.save` zip: its storages' folder and what may still be read.
struct Archive<R: Read + Seek> {
    zip: zip::ZipArchive<R>,
    budget: Budget,
    prefix: String,
}

/// Reads a `torch.save` file of `len` bytes.
pub fn read<R: Read + Seek>(reader: R, len: u64) -> Result<Value, String> {
    let mut budget = Budget::for_file(len);
    let mut zip = zip::ZipArchive::new(reader).map_err(|e| format!("not a torch.save zip archive ({e})"))?;
    let pickle_name = (0..zip.len())
        .filter_map(|i| zip.name_for_index(i).map(str::to_string))
        .find(|n| n.ends_with("data.pkl"))
        .ok_or("no data.pkl in the archive")?;
    let prefix = pickle_name.trim_end_matches("data.pkl").to_string();
    let pickle = zip
        .by_name(&pickle_name)
        .map_err(|e| e.to_string())
        .and_then(|f| budget.read_all(f))
        .map_err(|e| format!("{pickle_name}: {e}"))?;
    let root = unpickle(&pickle).map_err(|e| format!("{pickle_name}: {e}"))?;
    let mut archive = Archive { zip, budget, prefix };
    archive.value(root)
}

/// Reads a `torch.save` file held in memory.
pub fn read_bytes(bytes: &[u8]) -> Result<Value, String> {
    read(std::io::Cursor::new(bytes), bytes.len() as u64)
}

/// Whether `bytes` start as a zip archive does (as `torch.save` files do).
pub fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(b"PK\x03\x04")
}

fn global_name(module: &str, name: &str) -> String {
    format!("{module}.{name}")
}

impl<R: Read + Seek> Archive<R> {
    /// `o` as a [`Value`], its tensors read (the depth is bounded by the
    /// pickle's check).
    fn value(&mut self, o: Object) -> Result<Value, String> {
        Ok(match o {
            Object::None => Value::None,
            Object::Bool(b) => Value::Bool(b),
            Object::Int(i) => Value::Int(i as i64),
            Object::Long(i) => Value::Int(i),
            Object::Float(f) => Value::Float(f),
            Object::Unicode(s) => Value::Str(s),
            Object::Tuple(items) | Object::List(items) => Value::List(self.values(items)?),
            Object::Dict(entries) => Value::Dict(
                entries
                    .into_iter()
                    .map(|(k, v)| {
                        let k = self.value(k)?;
                        let v = self.value(v).map_err(|e| match &k {
                            Value::Str(key) => format!("{key}: {e}"),
                            _ => e,
                        })?;
                        Ok((k, v))
                    })
                    .collect::<Result<_, String>>()?,
            ),
            Object::Class {
                module_name,
                class_name,
            } => {
                let name = global_name(&module_name, &class_name);
                if !KNOWN_GLOBALS.contains(&name.as_str()) {
                    return Err(format!("the pickle refers to {name}, which this reader does not know"));
                }
                Value::Global(name)
            }
            Object::Reduce { callable, args } => self.call(*callable, *args)?,
            Object::Build { .. } | Object::PersistentLoad(_) | Object::Mark => {
                return Err("the pickle holds an object this reader does not know".into())
            }
        })
    }

    fn values(&mut self, items: Vec<Object>) -> Result<Vec<Value>, String> {
        items.into_iter().map(|o| self.value(o)).collect()
    }

    /// The calls a state dict holds: tensors, parameters and `torch.Size`.
    fn call(&mut self, callable: Object, args: Object) -> Result<Value, String> {
        let Object::Class {
            module_name,
            class_name,
        } = callable
        else {
            return Err("the pickle calls something other than a global".into());
        };
        let name = global_name(&module_name, &class_name);
        let Object::Tuple(mut args) = args else {
            return Err(format!("the pickle calls {name} without an argument tuple"));
        };
        match name.as_str() {
            "torch._utils._rebuild_tensor_v2" => {
                let t = tensor_ref(args).ok_or("a tensor whose storage or view is malformed")?;
                Ok(Value::Tensor(self.tensor(t)?))
            }
            "torch._utils._rebuild_parameter" if !args.is_empty() => self.value(args.remove(0)),
            "torch.Size" if args.len() == 1 => self.value(args.remove(0)),
            _ => Err(format!("the pickle calls {name}, which this reader does not run")),
        }
    }

    /// A tensor's values: its storage entry read (at most what the budget
    /// allows), then its view checked against the bytes actually read, with
    /// checked arithmetic, before anything of the view's size is allocated.
    fn tensor(&mut self, t: TensorRef) -> Result<Tensor, String> {
        let ty =
            storage_type(&t.storage_class).ok_or_else(|| format!("unsupported storage type {}", t.storage_class))?;
        let entry = format!("{}data/{}", self.prefix, t.storage_key);
        let bytes = self
            .zip
            .by_name(&entry)
            .map_err(|e| e.to_string())
            .and_then(|f| self.budget.read_all(f))
            .map_err(|e| format!("storage {entry}: {e}"))?;
        let element = ty.size * ty.lanes;
        let need = t.storage_len.checked_mul(element);
        if need.is_none_or(|need| bytes.len() < need) {
            return Err(format!(
                "storage {entry} holds {} bytes, too few for its {} {} elements (truncated file?)",
                bytes.len(),
                t.storage_len,
                ty.dtype
            ));
        }
        let view = || format!("shape {:?}, strides {:?}, offset {}", t.shape, t.strides, t.offset);
        let count = t
            .shape
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| format!("a view of {} has too many elements", view()))?;
        if count > 0 {
            let last = t
                .shape
                .iter()
                .zip(&t.strides)
                .try_fold(t.offset, |acc, (&n, &s)| acc.checked_add((n - 1).checked_mul(s)?));
            if last.is_none_or(|last| last >= t.storage_len) {
                return Err(format!(
                    "a view of {} reaches beyond its {}-element storage",
                    view(),
                    t.storage_len
                ));
            }
        }
        // Views that repeat elements (stride 0, as `expand` saves) may hold more
        // values than the storage: their f32 values count against the budget.
        if count > t.storage_len {
            self.budget
                .spend((count as u64).saturating_mul(4 * ty.lanes as u64))
                .map_err(|e| format!("a view of {}: {e}", view()))?;
        }
        let mut data = buffer(count * ty.lanes).map_err(|m| format!("{}: {m}", view()))?;
        let mut index = vec![0usize; t.shape.len()];
        for _ in 0..count {
            let at = t.offset + index.iter().zip(&t.strides).map(|(i, s)| i * s).sum::<usize>();
            for lane in bytes[at * element..][..element].chunks_exact(ty.size) {
                data.push((ty.decode)(lane));
            }
            // Next index in C order.
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < t.shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(Tensor {
            dtype: ty.dtype,
            shape: t.shape,
            data,
            complex: ty.lanes == 2,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// A torch.save-like zip holding `pickle` as its data.pkl.
    fn archive(pickle: &[u8]) -> Vec<u8> {
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        zip.start_file("archive/data.pkl", stored).unwrap();
        zip.write_all(pickle).unwrap();
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn plain_values_and_known_globals_are_read() {
        // {'n_modes': (6, 5), 'act': torch._C._nn.gelu, 'x': 0.5, 'f': False}
        let pickle = b"\x80\x02}q\x00(X\x07\x00\x00\x00n_modesK\x06K\x05\x86X\x03\x00\x00\x00actctorch._C._nn\ngelu\nX\x01\x00\x00\x00xG?\xe0\x00\x00\x00\x00\x00\x00X\x01\x00\x00\x00f\x89u.";
        let v = read_bytes(&archive(pickle)).unwrap();
        assert_eq!(v.get("n_modes"), Some(&Value::List(vec![Value::Int(6), Value::Int(5)])));
        assert_eq!(v.get("act"), Some(&Value::Global("torch._C._nn.gelu".into())));
        assert_eq!(v.get("x"), Some(&Value::Float(0.5)));
        assert_eq!(v.get("f"), Some(&Value::Bool(false)));
    }

    #[test]
    fn unknown_globals_and_calls_are_refused_by_name() {
        let global = b"\x80\x02}X\x01\x00\x00\x00acos\nsystem\ns.";
        let e = read_bytes(&archive(global)).unwrap_err();
        assert_eq!(e, "a: the pickle refers to os.system, which this reader does not know");
        let call = b"\x80\x02cbuiltins\neval\nX\x03\x00\x00\x001+1\x85R.";
        let e = read_bytes(&archive(call)).unwrap_err();
        assert_eq!(e, "the pickle calls builtins.eval, which this reader does not run");
        let e = read_bytes(b"PK\x03\x04 truncated").unwrap_err();
        assert!(e.starts_with("not a torch.save zip archive"), "{e}");
        assert!(is_zip(&archive(global)) && !is_zip(b"\x08\x00\x00\x00"));
    }
}
