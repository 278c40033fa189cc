//! PyTorch `.pt` files as neuraloperator writes them: `torch.save` of a dict of
//! tensors, a zip holding a pickle (`*/data.pkl`) and one raw file per storage
//! (`*/data/<key>`). The pickle is parsed by candle-core's unpickler; each
//! tensor is then read from its storage with its own offset and strides (the
//! neuraloperator Darcy files store Fortran-ordered views) and widened to f32
//! from any of torch's storage types, bool included. Hostile files are errors:
//! the pickle is scanned before candle reads it (`check_pickle`), zip entries
//! are read within a `Budget`, and views are checked against their storage.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use candle_core::pickle::{Object, Stack};

use crate::dataset::Array;
use crate::load::Budget;
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

/// Nesting candle's unpickler may build: it clones, drops and formats objects
/// recursively, so a deeper pickle could overflow the stack (a state dict nests
/// about 6 deep).
const MAX_PICKLE_DEPTH: u32 = 64;
/// Memory the unpickled objects may take, memoised copies included (candle
/// clones an object for each memo get and put): 256 MiB, far above a state
/// dict's pickle of a few kB to MB.
const MAX_PICKLE_MEMORY: u64 = 1 << 28;

/// What the scan knows of an object on candle's stack.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Mark,
    List,
    Dict,
    /// `collections.OrderedDict` or `defaultdict`, which candle's REDUCE turns into a dict.
    DictClass,
    Other,
}

#[derive(Clone, Copy)]
struct Item {
    kind: Kind,
    depth: u32,
    /// Memory of the object and everything it holds.
    memory: u64,
}

/// The pickle's bytes from an opcode on.
struct Ops<'a> {
    rest: &'a [u8],
}

impl<'a> Ops<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.rest.split_at_checked(n)?;
        self.rest = rest;
        Some(head)
    }

    /// A little-endian `u32`, or a byte when `short`.
    fn int(&mut self, short: bool) -> Option<u32> {
        Some(if short {
            self.take(1)?[0] as u32
        } else {
            u32::from_le_bytes(self.take(4)?.try_into().ok()?)
        })
    }

    /// A GLOBAL's line, without its `\n` (or `\r\n`).
    fn line(&mut self) -> Option<&'a [u8]> {
        let n = self.rest.iter().position(|&b| b == b'\n')?;
        let line = &self.take(n + 1)?[..n];
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }
}

/// Replays candle's unpickler (candle-core 0.10 `pickle::Stack::read`) on
/// `pickle` without building anything: an iterative simulation of its stack
/// that tracks only each object's kind, nesting depth and memory, so that
/// candle is only given pickles it reads without overflowing the stack,
/// allocating beyond the limits or failing on an object it would format.
fn check_pickle(pickle: &[u8]) -> Result<(), String> {
    let node = std::mem::size_of::<Object>() as u64;
    let leaf = |kind, payload: usize| Item {
        kind,
        depth: 1,
        memory: node + payload as u64,
    };
    let (mut stack, mut memo) = (Vec::<Item>::new(), HashMap::<u32, Item>::new());
    // Bytes of the objects candle creates and copies.
    let mut allocated = 0u64;
    let mut ops = Ops { rest: pickle };
    loop {
        let at = pickle.len() - ops.rest.len();
        let fail = |what: &str| format!("{what} at byte {at} of the pickle");
        let truncated = || fail("truncated opcode");
        let op = ops.take(1).ok_or_else(truncated)?[0];
        // The object the opcode pushes, and how many of its bytes are new.
        let (item, new) = match op {
            0x80 => {
                ops.take(1).ok_or_else(truncated)?;
                continue;
            }
            b'c' => {
                let (module, class) = (ops.line(), ops.line());
                let (module, class) = module.zip(class).ok_or_else(|| fail("unterminated GLOBAL"))?;
                let dict = module == b"collections" && matches!(class, b"OrderedDict" | b"defaultdict");
                let item = leaf(
                    if dict { Kind::DictClass } else { Kind::Other },
                    module.len() + class.len(),
                );
                (item, item.memory)
            }
            b'K' | b'M' | b'J' | b'G' | 0x8a | b'X' => {
                let n = match op {
                    b'K' => 1,
                    b'M' => 2,
                    b'J' => 4,
                    b'G' => 8,
                    // candle shifts each byte into an i64: more than 8 overflow.
                    0x8a => match ops.int(true).ok_or_else(truncated)? {
                        n @ 0..=8 => n,
                        n => return Err(fail(&format!("a {n}-byte LONG1"))),
                    },
                    // Checked against the bytes left: candle allocates the length it reads.
                    _ => ops.int(false).ok_or_else(truncated)?,
                } as usize;
                ops.take(n).ok_or_else(truncated)?;
                let item = leaf(Kind::Other, if op == b'X' { n } else { 0 });
                (item, item.memory)
            }
            0x88 | 0x89 | b'N' | b')' | b']' | b'}' | b'd' | b'(' => {
                let kind = match op {
                    b']' => Kind::List,
                    // candle reads DICT as EMPTY_DICT (leaving the mark on the stack).
                    b'}' | b'd' => Kind::Dict,
                    b'(' => Kind::Mark,
                    _ => Kind::Other,
                };
                (leaf(kind, 0), node)
            }
            b'Q' | 0x85 | 0x86 | 0x87 | b'b' | b'R' | 0x81 | b't' => {
                let items = match op {
                    b't' => pop_to_mark(&mut stack),
                    b'Q' | 0x85 => pop(&mut stack, 1),
                    0x87 => pop(&mut stack, 3),
                    _ => pop(&mut stack, 2),
                };
                let items = items.ok_or_else(|| fail("missing operands"))?;
                match (op, items.first().map(|i| i.kind), items.last().map(|i| i.kind)) {
                    (b'b', Some(Kind::Dict), Some(Kind::Dict)) => (merge(Kind::Dict, items[0], &items[1..]), 0),
                    (b'R', Some(Kind::DictClass), _) => (leaf(Kind::Dict, 0), node),
                    _ => (merge(Kind::Other, leaf(Kind::Other, 0), &items), node),
                }
            }
            b'a' | b'e' | b's' | b'u' => {
                let (container, items) = match op {
                    b'a' => (Kind::List, pop(&mut stack, 1)),
                    b'e' => (Kind::List, pop_to_mark(&mut stack)),
                    b's' => (Kind::Dict, pop(&mut stack, 2)),
                    _ => (Kind::Dict, pop_to_mark(&mut stack).filter(|items| items.len() % 2 == 0)),
                };
                let items = items.ok_or_else(|| fail("missing or odd operands"))?;
                let target = stack
                    .pop()
                    .filter(|t| t.kind == container)
                    .ok_or_else(|| fail("no list or dict to add to"))?;
                (merge(container, target, &items), 0)
            }
            b'h' | b'j' => {
                let id = ops.int(op == b'h').ok_or_else(truncated)?;
                let item = *memo.get(&id).ok_or_else(|| fail(&format!("memo {id} unset")))?;
                (item, item.memory)
            }
            b'q' | b'r' => {
                let id = ops.int(op == b'q').ok_or_else(truncated)?;
                let item = stack.pop().ok_or_else(|| fail("empty stack"))?;
                memo.insert(id, item);
                (item, item.memory)
            }
            b'.' => return Ok(()),
            _ => return Err(fail(&format!("unsupported opcode 0x{op:02x}"))),
        };
        allocated += new;
        if item.depth > MAX_PICKLE_DEPTH {
            return Err(fail(&format!("objects nested over {MAX_PICKLE_DEPTH} deep")));
        }
        if allocated > MAX_PICKLE_MEMORY {
            return Err(fail(&format!("objects over {MAX_PICKLE_MEMORY} bytes")));
        }
        stack.push(item);
    }
}

/// `base` holding `items` besides what it held.
fn merge(kind: Kind, base: Item, items: &[Item]) -> Item {
    items.iter().fold(Item { kind, ..base }, |acc, i| Item {
        kind,
        depth: acc.depth.max(i.depth + 1),
        memory: acc.memory + i.memory,
    })
}

/// The top `n` items.
fn pop(stack: &mut Vec<Item>, n: usize) -> Option<Vec<Item>> {
    Some(stack.split_off(stack.len().checked_sub(n)?))
}

/// The items above the topmost mark, which goes too (candle's `pop_to_marker`).
fn pop_to_mark(stack: &mut Vec<Item>) -> Option<Vec<Item>> {
    let mark = stack.iter().rposition(|i| i.kind == Kind::Mark)?;
    let items = stack.split_off(mark + 1);
    stack.pop();
    Some(items)
}

/// Every tensor of a `.pt` file holding a dict of tensors (entries that are
/// not tensors are skipped), by key.
pub fn read_tensors(path: impl AsRef<Path>) -> Result<BTreeMap<String, StoredTensor>, DataError> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| err(path, e.to_string()))?;
    let mut budget = Budget::for_file(file.metadata().map_err(|e| err(path, e.to_string()))?.len());
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| err(path, format!("not a torch.save zip archive ({e})")))?;
    let pickle_name = (0..zip.len())
        .filter_map(|i| zip.name_for_index(i).map(str::to_string))
        .find(|n| n.ends_with("data.pkl"))
        .ok_or_else(|| err(path, "no data.pkl in the archive"))?;
    let prefix = pickle_name.trim_end_matches("data.pkl").to_string();
    let pickle = zip
        .by_name(&pickle_name)
        .map_err(|e| e.to_string())
        .and_then(|f| budget.read_all(f))
        .map_err(|e| err(path, format!("{pickle_name}: {e}")))?;
    check_pickle(&pickle).map_err(|e| err(path, format!("{pickle_name}: {e}")))?;
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
        let tensor = read_tensor(&mut zip, &mut budget, &prefix, t).map_err(|e| err(path, format!("{key}: {e}")))?;
        out.insert(key, tensor);
    }
    Ok(out)
}

/// A tensor's values: its storage entry read (at most what the budget allows),
/// then its view checked against the bytes actually read, with checked
/// arithmetic, before anything of the view's size is allocated or indexed.
fn read_tensor<R: std::io::Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    budget: &mut Budget,
    prefix: &str,
    t: TensorRef,
) -> Result<StoredTensor, String> {
    let ty = storage_type(&t.storage_class).ok_or_else(|| format!("unsupported storage type {}", t.storage_class))?;
    let entry = format!("{prefix}data/{}", t.storage_key);
    let bytes = zip
        .by_name(&entry)
        .map_err(|e| e.to_string())
        .and_then(|f| budget.read_all(f))
        .map_err(|e| format!("storage {entry}: {e}"))?;
    let need = t.storage_len.checked_mul(ty.size);
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
        budget
            .spend((count as u64).saturating_mul(4))
            .map_err(|e| format!("a view of {}: {e}", view()))?;
    }
    let mut data = crate::buffer(count).map_err(|m| format!("{}: {m}", view()))?;
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
        array: Array::new(t.shape, data).map_err(|e| e.to_string())?,
    })
}
