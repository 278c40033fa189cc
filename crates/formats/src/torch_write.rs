//! Writes `torch.save` files that `torch.load` reads: a [`Value`] pickled
//! (protocol 2) into `NAME/data.pkl`, each tensor's values as a storage of
//! its own under `NAME/data/`, and the archive's `version` and `byteorder`
//! records, all stored uncompressed as torch writes them.

use std::io::Write;

use crate::torch::{Tensor, Value};

/// Pickle opcodes this writer emits.
mod op {
    pub const PROTO: u8 = 0x80;
    pub const EMPTY_DICT: u8 = b'}';
    pub const EMPTY_LIST: u8 = b']';
    pub const MARK: u8 = b'(';
    pub const SETITEMS: u8 = b'u';
    pub const APPENDS: u8 = b'e';
    pub const TUPLE: u8 = b't';
    pub const BINUNICODE: u8 = b'X';
    pub const BININT1: u8 = b'K';
    pub const BININT: u8 = b'J';
    pub const LONG1: u8 = 0x8a;
    pub const BINFLOAT: u8 = b'G';
    pub const NEWTRUE: u8 = 0x88;
    pub const NEWFALSE: u8 = 0x89;
    pub const NONE: u8 = b'N';
    pub const GLOBAL: u8 = b'c';
    pub const BINPERSID: u8 = b'Q';
    pub const REDUCE: u8 = b'R';
    pub const EMPTY_TUPLE: u8 = b')';
    pub const STOP: u8 = b'.';
}

/// The pickle of `root` and the storages it refers to, in order.
struct Pickler<'a> {
    out: Vec<u8>,
    storages: Vec<&'a Tensor>,
}

impl<'a> Pickler<'a> {
    fn str(&mut self, s: &str) {
        self.out.push(op::BINUNICODE);
        self.out.extend((s.len() as u32).to_le_bytes());
        self.out.extend(s.as_bytes());
    }

    fn int(&mut self, i: i64) {
        match i {
            0..=255 => self.out.extend([op::BININT1, i as u8]),
            _ if i32::try_from(i).is_ok() => {
                self.out.push(op::BININT);
                self.out.extend((i as i32).to_le_bytes());
            }
            _ => {
                self.out.extend([op::LONG1, 8]);
                self.out.extend(i.to_le_bytes());
            }
        }
    }

    fn global(&mut self, module: &str, name: &str) {
        self.out.push(op::GLOBAL);
        self.out.extend(format!("{module}\n{name}\n").as_bytes());
    }

    fn tuple_of(&mut self, items: &[usize]) {
        self.out.push(op::MARK);
        for &i in items {
            self.int(i as i64);
        }
        self.out.push(op::TUPLE);
    }

    fn value(&mut self, v: &'a Value) -> Result<(), String> {
        match v {
            Value::None => self.out.push(op::NONE),
            Value::Bool(b) => self.out.push(if *b { op::NEWTRUE } else { op::NEWFALSE }),
            Value::Int(i) => self.int(*i),
            Value::Float(f) => {
                self.out.push(op::BINFLOAT);
                self.out.extend(f.to_be_bytes());
            }
            Value::Str(s) => self.str(s),
            Value::List(items) => {
                self.out.extend([op::EMPTY_LIST, op::MARK]);
                for item in items {
                    self.value(item)?;
                }
                self.out.push(op::APPENDS);
            }
            Value::Dict(entries) => {
                self.out.extend([op::EMPTY_DICT, op::MARK]);
                for (k, v) in entries {
                    self.value(k)?;
                    self.value(v)?;
                }
                self.out.push(op::SETITEMS);
            }
            Value::Global(name) => {
                let (module, name) = name
                    .rsplit_once('.')
                    .ok_or_else(|| format!("global {name} has no module"))?;
                self.global(module, name);
            }
            Value::Tensor(t) => self.tensor(t)?,
        }
        Ok(())
    }

    /// `_rebuild_tensor_v2(storage, 0, shape, C strides, False, OrderedDict())`.
    fn tensor(&mut self, t: &'a Tensor) -> Result<(), String> {
        let count: usize = t.shape.iter().product();
        let lanes = if t.complex { 2 } else { 1 };
        if t.data.len() != count * lanes {
            return Err(format!("a tensor of shape {:?} holds {} values", t.shape, t.data.len()));
        }
        let key = self.storages.len().to_string();
        self.storages.push(t);
        self.global("torch._utils", "_rebuild_tensor_v2");
        self.out.push(op::MARK);
        // The persistent id: ('storage', class, key, location, elements).
        self.out.push(op::MARK);
        self.str("storage");
        self.global(
            "torch",
            if t.complex {
                "ComplexFloatStorage"
            } else {
                "FloatStorage"
            },
        );
        self.str(&key);
        self.str("cpu");
        self.int(count as i64);
        self.out.extend([op::TUPLE, op::BINPERSID]);
        self.int(0);
        self.tuple_of(&t.shape);
        let mut strides = vec![1usize; t.shape.len()];
        for d in (0..t.shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * t.shape[d + 1];
        }
        self.tuple_of(&strides);
        self.out.push(op::NEWFALSE);
        self.global("collections", "OrderedDict");
        self.out.extend([op::EMPTY_TUPLE, op::REDUCE, op::TUPLE, op::REDUCE]);
        Ok(())
    }
}

/// A `torch.save` file of `root` whose records live under `name/` (torch
/// names them after the file); tensors are written as float32 or complex64.
pub fn write(name: &str, root: &Value) -> Result<Vec<u8>, String> {
    let mut pickler = Pickler {
        out: vec![op::PROTO, 2],
        storages: Vec::new(),
    };
    pickler.value(root)?;
    pickler.out.push(op::STOP);
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut record = |path: String, bytes: &[u8]| -> Result<(), String> {
        zip.start_file(path, stored).map_err(|e| e.to_string())?;
        zip.write_all(bytes).map_err(|e| e.to_string())
    };
    record(format!("{name}/data.pkl"), &pickler.out)?;
    record(format!("{name}/byteorder"), b"little")?;
    for (key, t) in pickler.storages.iter().enumerate() {
        let bytes: Vec<u8> = t.data.iter().flat_map(|v| v.to_le_bytes()).collect();
        record(format!("{name}/data/{key}"), &bytes)?;
    }
    record(format!("{name}/version"), b"3\n")?;
    Ok(zip.finish().map_err(|e| e.to_string())?.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torch::read_bytes;

    #[test]
    fn written_files_read_back_equal() {
        let root = Value::Dict(vec![
            (
                Value::Str("w".into()),
                Value::Tensor(Tensor {
                    dtype: "complex64",
                    shape: vec![2, 3],
                    data: (0..12).map(|i| i as f32 * 0.5 - 2.0).collect(),
                    complex: true,
                }),
            ),
            (
                Value::Str("b".into()),
                Value::Tensor(Tensor {
                    dtype: "float32",
                    shape: vec![3],
                    data: vec![1.0, -2.5, 3e-8],
                    complex: false,
                }),
            ),
            (
                Value::Str("_metadata".into()),
                Value::Dict(vec![
                    (
                        Value::Str("n_modes".into()),
                        Value::List(vec![Value::Int(6), Value::Int(70000)]),
                    ),
                    (Value::Str("act".into()), Value::Global("torch._C._nn.gelu".into())),
                    (Value::Str("ratio".into()), Value::Float(0.5)),
                    (Value::Str("big".into()), Value::Int(1 << 40)),
                    (Value::Str("none".into()), Value::None),
                    (Value::Str("yes".into()), Value::Bool(true)),
                ]),
            ),
        ]);
        let bytes = write("model_state_dict", &root).unwrap();
        let back = read_bytes(&bytes).unwrap();
        let Value::Dict(entries) = &root else { unreachable!() };
        for (k, v) in entries {
            let Value::Str(k) = k else { unreachable!() };
            match (v, back.get(k)) {
                (Value::Dict(want), Some(Value::Dict(got))) => {
                    assert_eq!(got.len(), want.len());
                    assert!(want.iter().all(|e| got.contains(e)), "{k}: {got:?}");
                }
                (want, got) => assert_eq!(got, Some(want), "{k}"),
            }
        }
        let bad = Value::Tensor(Tensor {
            dtype: "float32",
            shape: vec![2],
            data: vec![1.0],
            complex: false,
        });
        assert!(write("x", &bad).unwrap_err().contains("holds 1 values"));
    }
}
