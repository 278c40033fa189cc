//! Mutators: generic byte-level ones (bit flips, interesting bytes,
//! insertions, deletions, duplications, truncation, splicing) and
//! structure-aware ones that keep a file's framing valid so that the parser
//! behind it is reached: numbers in text replaced by boundary values,
//! little-endian integer fields overwritten, `.npy` and safetensors headers
//! rewritten with their lengths fixed up, zip archives (`.npz`, `.pt`)
//! rebuilt around a mutated entry, pickle integers widened.

use std::io::{Cursor, Read, Write};

use crate::rng::Rng;

/// What an input is, for the structure-aware mutators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Binary,
    /// JSON or TOML.
    Text,
    Npy,
    /// A zip archive (`.npz`, `.pt`): its entries are mutated by their own format.
    Zip,
    Pickle,
    Safetensors,
}

/// Inputs never grow beyond this.
pub const MAX_LEN: usize = 4 << 20;

/// Numbers that break size arithmetic and float parsing.
pub const BOUNDARY_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "3",
    "7",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "1e300",
    "-1e300",
    "1e-300",
    "1e18",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "0.5",
    "-0.0",
    "1.5",
];

/// Strings that mean something to one of the parsers (dtypes, enum values,
/// keys), and a few that mean nothing.
const INTERESTING_STRINGS: &[&str] = &[
    "",
    "x",
    "y",
    "a",
    "u",
    "<f4",
    ">f4",
    "<f8",
    "<f2",
    "|b1",
    "<i8",
    "<u2",
    "<c8",
    "|u1",
    "O",
    "<U3",
    "|V8",
    "<M8[s]",
    "F32",
    "F64",
    "F16",
    "BF16",
    "I64",
    "BOOL",
    "U8",
    "C64",
    "tucker",
    "cp",
    "tt",
    "dense",
    "complex",
    "linear",
    "identity",
    "soft-gating",
    "group_norm",
    "instance_norm",
    "ada_in",
    "gelu",
    "tanh",
    "symmetric",
    "one-sided",
    "full",
    "half",
    "mixed",
    "samples,channels,grid",
    "channel-wise",
    "pixel-wise",
    "darcy",
    "burgers",
    "navier-stokes",
    "h1",
    "l2",
    "step",
    "cosine",
    "storage",
    "FloatStorage",
    "_rebuild_tensor_v2",
    "../../x",
    "\u{0}",
    "\u{10ffff}",
];

const TEXT_SNIPPETS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    "\"",
    "'",
    ",",
    ":",
    "=",
    "\n",
    "null",
    "[]",
    "{}",
    "true",
    "[[",
    "]]",
    "\n[run]\n",
    "\\u0000",
    "()",
    "(1,)",
    "\u{feff}",
];

/// A mutation of `input`: one to a few stacked mutations; `other` is another
/// input of the same kind, for splicing.
pub fn mutate(rng: &mut Rng, input: &[u8], other: &[u8], format: Format) -> Vec<u8> {
    let mut out = input.to_vec();
    let many = rng.one_in(3);
    let rounds = 1 + rng.below(if many { 8 } else { 3 });
    for _ in 0..rounds {
        out = mutate_once(rng, out, other, format);
        out.truncate(MAX_LEN);
    }
    out
}

fn mutate_once(rng: &mut Rng, data: Vec<u8>, other: &[u8], format: Format) -> Vec<u8> {
    let structured = match format {
        Format::Npy if rng.one_in(2) => npy_header(rng, &data),
        Format::Safetensors if rng.one_in(2) => safetensors_header(rng, &data),
        Format::Zip if rng.below(3) < 2 => zip_entry(rng, &data),
        Format::Pickle if rng.one_in(2) => Some(pickle(rng, data.clone())),
        Format::Text if rng.below(3) < 2 => Some(text(rng, data.clone())),
        _ => None,
    };
    match structured {
        Some(out) => out,
        None => generic(rng, data, other),
    }
}

/// One byte-level mutation.
pub fn generic(rng: &mut Rng, mut d: Vec<u8>, other: &[u8]) -> Vec<u8> {
    if d.is_empty() {
        d.push(rng.next_u64() as u8);
        return d;
    }
    let len = d.len();
    match rng.below(12) {
        0 => {
            let at = rng.below(len);
            d[at] ^= 1 << rng.below(8);
        }
        1 => {
            let at = rng.below(len);
            d[at] = *rng.pick(&[0u8, 0xff, 0x7f, 0x80, 1, 0x40, 0x20]);
        }
        2 | 3 => le_field(rng, &mut d),
        4 => {
            let at = rng.below(len + 1);
            let n = rng.small_len(256);
            let bytes: Vec<u8> = if rng.one_in(2) {
                vec![rng.next_u64() as u8; n]
            } else {
                (0..n).map(|_| rng.next_u64() as u8).collect()
            };
            d.splice(at..at, bytes);
        }
        5 => {
            let at = rng.below(len);
            let n = rng.small_len(len - at).min(len - at);
            d.drain(at..at + n);
        }
        6 => {
            let at = rng.below(len);
            let n = rng.small_len(len - at).min(len - at);
            let copy = d[at..at + n].to_vec();
            let to = rng.below(len + 1);
            d.splice(to..to, copy);
        }
        7 => d.truncate(rng.below(len)),
        8 if !other.is_empty() => {
            let (cut, from) = (rng.below(len + 1), rng.below(other.len()));
            d.truncate(cut);
            d.extend_from_slice(&other[from..]);
        }
        9 => {
            if let Some(n) = replace_number(rng, &d) {
                d = n;
            }
        }
        10 if !other.is_empty() => {
            let from = rng.below(other.len());
            let n = rng.small_len(other.len() - from).min(other.len() - from);
            let at = rng.below(len);
            let end = (at + n).min(len);
            d.splice(at..end, other[from..from + n].iter().copied());
        }
        _ => {
            let at = rng.below(len);
            d[at] = d[at].wrapping_add(rng.below(70) as u8).wrapping_sub(35);
        }
    }
    d
}

/// Overwrites a little-endian u16, u32 or u64 at a random (often aligned)
/// offset with a boundary value or a small change of what was there.
pub fn le_field(rng: &mut Rng, d: &mut [u8]) {
    let width = *rng.pick(&[2usize, 4, 4, 8, 8]);
    if d.len() < width {
        return;
    }
    let mut at = rng.below(d.len() - width + 1);
    if rng.one_in(2) {
        at -= at % width;
    }
    let mut old = [0u8; 8];
    old[..width].copy_from_slice(&d[at..at + width]);
    let old = u64::from_le_bytes(old);
    let bits = 8 * width as u32;
    let max = if width == 8 { u64::MAX } else { (1u64 << bits) - 1 };
    let value = match rng.below(12) {
        0 => 0,
        1 => 1,
        2 => max,
        3 => max - 1,
        4 => 1 << (bits - 1),
        5 => (1 << (bits - 1)) - 1,
        6 => 1u64 << 31,
        7 => 1u64 << 32,
        8 => old.wrapping_add(1 + rng.below(16) as u64),
        9 => old.wrapping_sub(1 + rng.below(16) as u64),
        10 => old.wrapping_mul(*rng.pick(&[2u64, 16, 256, 65536])),
        _ => rng.next_u64(),
    } & max;
    d[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
}

fn is_num_byte(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-')
}

/// Replaces one number written in text (anywhere in the bytes: JSON, TOML,
/// npy and safetensors headers, MATLAB text headers) with a boundary value or
/// a neighbour of its own value.
pub fn replace_number(rng: &mut Rng, d: &[u8]) -> Option<Vec<u8>> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i < d.len() {
        if d[i].is_ascii_digit() {
            let start = if i > 0 && d[i - 1] == b'-' { i - 1 } else { i };
            starts.push(start);
            while i < d.len() && is_num_byte(d[i]) {
                i += 1;
            }
        }
        i += 1;
    }
    if starts.is_empty() {
        return None;
    }
    let start = *rng.pick(&starts);
    let mut end = start + 1;
    while end < d.len() && is_num_byte(d[end]) {
        end += 1;
    }
    let old = std::str::from_utf8(&d[start..end]).ok()?;
    let new = match (rng.below(4), old.parse::<i128>()) {
        (0, Ok(v)) => v.saturating_add(rng.below(5) as i128 - 2).to_string(),
        (1, Ok(v)) => v.saturating_mul(*rng.pick(&[2i128, 10, 1000, 1 << 32, -1])).to_string(),
        _ => rng.pick(BOUNDARY_NUMBERS).to_string(),
    };
    let mut out = d[..start].to_vec();
    out.extend_from_slice(new.as_bytes());
    out.extend_from_slice(&d[end..]);
    Some(out)
}

/// Replaces the content of one quoted string (`"…"` or `'…'`).
fn replace_string(rng: &mut Rng, d: &[u8]) -> Option<Vec<u8>> {
    let quotes: Vec<usize> = (0..d.len()).filter(|&i| d[i] == b'"' || d[i] == b'\'').collect();
    if quotes.is_empty() {
        return None;
    }
    let open = *rng.pick(&quotes);
    let close = (open + 1..d.len()).find(|&j| d[j] == d[open])?;
    let new = if rng.one_in(16) {
        "a".repeat(1 + rng.below(5000))
    } else {
        rng.pick(INTERESTING_STRINGS).to_string()
    };
    let mut out = d[..=open].to_vec();
    out.extend_from_slice(new.as_bytes());
    out.extend_from_slice(&d[close..]);
    Some(out)
}

fn lines(d: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in d.iter().enumerate() {
        if b == b'\n' {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < d.len() {
        out.push((start, d.len()));
    }
    out
}

/// One text-level mutation (JSON, TOML, npy header dicts).
pub fn text(rng: &mut Rng, d: Vec<u8>) -> Vec<u8> {
    let attempt = match rng.below(9) {
        0..=2 => replace_number(rng, &d),
        3 | 4 => replace_string(rng, &d),
        5 => {
            let flips: [(&[u8], &[u8]); 4] = [
                (b"true", b"false"),
                (b"false", b"true"),
                (b"True", b"False"),
                (b"False", b"True"),
            ];
            let (from, to) = *rng.pick(&flips);
            let hits: Vec<usize> = d
                .windows(from.len())
                .enumerate()
                .filter(|(_, w)| *w == from)
                .map(|(i, _)| i)
                .collect();
            (!hits.is_empty()).then(|| {
                let at = *rng.pick(&hits);
                let mut out = d[..at].to_vec();
                out.extend_from_slice(to);
                out.extend_from_slice(&d[at + from.len()..]);
                out
            })
        }
        6 => {
            // Delete, duplicate or move a line (a TOML key, a JSON member).
            let ls = lines(&d);
            (!ls.is_empty()).then(|| {
                let (s, e) = *rng.pick(&ls);
                let line = d[s..e].to_vec();
                let mut out = d.clone();
                match rng.below(3) {
                    0 => {
                        out.drain(s..e);
                    }
                    1 => {
                        out.splice(s..s, line);
                    }
                    _ => {
                        out.drain(s..e);
                        let (to, _) = *rng.pick(&lines(&out).into_iter().chain([(out.len(), 0)]).collect::<Vec<_>>());
                        out.splice(to..to, line);
                    }
                }
                out
            })
        }
        7 => {
            // Delete from one delimiter to the next (a JSON member or array element).
            let delims: Vec<usize> = (0..d.len()).filter(|&i| matches!(d[i], b',' | b'[' | b'{')).collect();
            (!delims.is_empty()).then(|| {
                let s = *rng.pick(&delims) + 1;
                let e = (s..d.len())
                    .find(|&j| matches!(d[j], b',' | b']' | b'}'))
                    .unwrap_or(d.len());
                let mut out = d.clone();
                out.drain(s..e);
                out
            })
        }
        _ => {
            let at = rng.below(d.len() + 1);
            let mut out = d.clone();
            out.splice(at..at, rng.pick(TEXT_SNIPPETS).bytes());
            Some(out)
        }
    };
    attempt.unwrap_or_else(|| generic(rng, d, &[]))
}

/// A `.npy` file with its header dict mutated as text and its header length
/// (and sometimes its version) rewritten to match.
fn npy_header(rng: &mut Rng, d: &[u8]) -> Option<Vec<u8>> {
    if d.len() < 10 || !d.starts_with(b"\x93NUMPY") {
        return None;
    }
    let (len, start): (usize, usize) = match d[6] {
        1 => (u16::from_le_bytes([d[8], d[9]]) as usize, 10),
        _ if d.len() >= 12 => (u32::from_le_bytes([d[8], d[9], d[10], d[11]]) as usize, 12),
        _ => return None,
    };
    let header = d.get(start..start.checked_add(len)?)?;
    let body = &d[start + len..];
    let header = text(rng, header.to_vec());
    let version = if rng.one_in(8) { 3 - d[6].min(2) } else { d[6] };
    Some(npy_file(version, &header, body))
}

/// `.npy` bytes from a version (1: u16 header length, else u32), a header dict
/// and the data.
pub fn npy_file(version: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header.len().min(u16::MAX as usize) as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header);
    out.extend_from_slice(body);
    out
}

/// A safetensors file with its JSON header mutated as text and its length
/// prefix rewritten to match.
fn safetensors_header(rng: &mut Rng, d: &[u8]) -> Option<Vec<u8>> {
    let n = u64::from_le_bytes(d.get(..8)?.try_into().ok()?);
    let end = 8usize.checked_add(usize::try_from(n).ok()?)?;
    let header = d.get(8..end)?;
    let header = text(rng, header.to_vec());
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(&d[end..]);
    Some(out)
}

/// The entries of a zip archive, in order.
pub fn zip_entries(d: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let mut zip = zip::ZipArchive::new(Cursor::new(d)).ok()?;
    let mut out = Vec::new();
    for i in 0..zip.len() {
        let mut f = zip.by_index(i).ok()?;
        if f.size() > MAX_LEN as u64 {
            return None;
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).ok()?;
        out.push((f.name().to_string(), bytes));
    }
    Some(out)
}

/// A zip archive of `entries` (the first of a repeated name), stored or deflated.
pub fn zip_archive(entries: &[(String, Vec<u8>)], deflate: bool) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let method = if deflate {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let mut names = std::collections::HashSet::new();
    for (name, bytes) in entries {
        // A renamed entry may take another's name: zip writes each name once.
        if !names.insert(name) {
            continue;
        }
        let options = SimpleFileOptions::default().compression_method(method);
        w.start_file(name.as_str(), options).expect("writing to memory");
        w.write_all(bytes).expect("writing to memory");
    }
    w.finish().expect("writing to memory").into_inner()
}

fn entry_format(name: &str) -> Format {
    if name.ends_with(".npy") {
        Format::Npy
    } else if name.ends_with(".pkl") {
        Format::Pickle
    } else if name.ends_with(".json") || name.ends_with("version") || name.ends_with("byteorder") {
        Format::Text
    } else {
        Format::Binary
    }
}

/// A zip archive rebuilt with valid checksums around one mutated entry, or
/// with an entry dropped, duplicated or renamed.
fn zip_entry(rng: &mut Rng, d: &[u8]) -> Option<Vec<u8>> {
    let mut entries = zip_entries(d)?;
    if entries.is_empty() {
        return None;
    }
    let i = rng.below(entries.len());
    match rng.below(8) {
        0 => {
            entries.remove(i);
        }
        1 => {
            let copy = entries[i].clone();
            let j = rng.below(entries.len());
            entries[j].1 = copy.1;
        }
        2 => {
            let name = &mut entries[i].0;
            match rng.below(3) {
                0 => *name = name.rsplit('/').next().unwrap_or_default().to_string(),
                1 => name.push('x'),
                _ => *name = format!("{}{name}", rng.pick(&["a/", "../", "/", ""])),
            }
        }
        _ => {
            let other = entries[rng.below(entries.len())].1.clone();
            let format = entry_format(&entries[i].0);
            let rounds = 1 + rng.below(2);
            for _ in 0..rounds {
                let e = std::mem::take(&mut entries[i].1);
                entries[i].1 = mutate_once(rng, e, &other, format);
            }
        }
    }
    Some(zip_archive(&entries, rng.one_in(4)))
}

/// Pickle opcodes, to insert anywhere.
const PICKLE_OPCODES: &[u8] = b"()Nt}]Rbsuea.012rjq\x85\x86\x87\x88\x89Q\x93\x94\x95KMJ";

/// One pickle-level mutation: an integer opcode (`BININT1`, `BININT2`,
/// `BININT`) replaced by another width or a `LONG1` with a boundary value, or
/// an opcode inserted or deleted. Pickles have no length fields, so the rest
/// of the stream still parses.
fn pickle(rng: &mut Rng, mut d: Vec<u8>) -> Vec<u8> {
    let ints: Vec<usize> = (0..d.len()).filter(|&i| matches!(d[i], b'K' | b'M' | b'J')).collect();
    match rng.below(4) {
        0 | 1 if !ints.is_empty() => {
            let at = *rng.pick(&ints);
            let old_len = 1 + match d[at] {
                b'K' => 1,
                b'M' => 2,
                _ => 4,
            };
            let end = (at + old_len).min(d.len());
            let value: i64 = match rng.below(8) {
                0 => 0,
                1 => -1,
                2 => i64::MAX,
                3 => i64::MIN,
                4 => 1 << 32,
                5 => (1 << 31) - 1,
                6 => u32::MAX as i64,
                _ => rng.below(1 << 20) as i64,
            };
            let new: Vec<u8> = match rng.below(4) {
                0 => vec![b'K', value as u8],
                1 => [&[b'M'][..], &(value as u16).to_le_bytes()].concat(),
                2 => [&[b'J'][..], &(value as i32).to_le_bytes()].concat(),
                _ => {
                    let mut v = vec![0x8a, 8];
                    v.extend_from_slice(&value.to_le_bytes());
                    if rng.one_in(4) {
                        v[1] = 9;
                        v.push(if value < 0 { 0xff } else { 0 });
                    }
                    v
                }
            };
            d.splice(at..end, new);
        }
        2 if !d.is_empty() => {
            let at = rng.below(d.len());
            d.remove(at);
        }
        _ => {
            let at = rng.below(d.len() + 1);
            d.insert(at, *rng.pick(PICKLE_OPCODES));
        }
    }
    d
}
