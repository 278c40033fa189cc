//! Pickles read without executing anything: candle-core's unpickler builds
//! plain objects (globals as names, calls as `Reduce` nodes), and is given
//! only pickles a scan (`check`) has replayed first, so that a hostile pickle
//! cannot overflow the stack, allocate past the limits or reach an object
//! candle would fail on.

use std::collections::HashMap;

use candle_core::pickle::{Object, Stack};

/// The object a pickle builds, after [`check`].
pub fn unpickle(pickle: &[u8]) -> Result<Object, String> {
    check(pickle)?;
    let mut stack = Stack::empty();
    stack
        .read_loop(&mut std::io::Cursor::new(pickle))
        .map_err(|e| format!("unreadable pickle: {}", one_line(e)))?;
    stack
        .finalize()
        .map_err(|e| format!("unreadable pickle: {}", one_line(e)))
}

/// candle's error without the backtrace it attaches under `RUST_BACKTRACE`.
fn one_line(e: candle_core::Error) -> String {
    match e {
        candle_core::Error::WithBacktrace { inner, .. } => one_line(*inner),
        other => other.to_string().replace('\n', " "),
    }
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
pub fn check(pickle: &[u8]) -> Result<(), String> {
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
