//! NumPy `.npy` arrays through the `npyz` crate: read as float32 (any real
//! dtype widened or narrowed to f32) or complex64 (complex128 narrowed), in
//! either byte order and either memory order (float16 reported as such);
//! written as float32 (`<f4`), complex64 (`<c8`) or float16 (`<f2`), C order.
//!
//! Complex data are kept interleaved (re, im), the layout of
//! `torch.view_as_real`, so a `<c8` array of shape `S` holds `2·prod(S)` floats.
//!
//! Before npyz sees a header, its length and its shape are checked against the
//! file: a corrupt or hostile header is an error, never a panic (npyz multiplies
//! the dims unchecked) or an allocation of the size it claims.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use npyz::{Order, TypeChar, TypeStr, WriterBuilder};
use num_complex::Complex;

#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a valid .npy file: {reason}")]
    Format { path: PathBuf, reason: String },
    #[error("{path}: dtype '{dtype}' is not supported (expected a float, integer, bool or complex dtype)")]
    Dtype { path: PathBuf, dtype: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F32,
    C64,
    /// float16 (`<f2`): read widened to f32 exactly, written rounded to nearest.
    F16,
}

impl DType {
    fn descr(self) -> &'static str {
        match self {
            DType::F32 => "<f4",
            DType::C64 => "<c8",
            DType::F16 => "<f2",
        }
    }

    /// f32 values per element.
    pub fn floats(self) -> usize {
        match self {
            DType::F32 | DType::F16 => 1,
            DType::C64 => 2,
        }
    }
}

/// An array read from or written to a `.npy` file.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Values in C order; complex as interleaved (re, im).
    pub data: Vec<f32>,
    /// numpy's name of the dtype the file stored (`int64`, `bool`, ...): what
    /// `dtype` was read from.
    pub stored: &'static str,
}

impl NpyArray {
    pub fn new(shape: Vec<usize>, dtype: DType, data: Vec<f32>) -> Self {
        assert_eq!(
            shape.iter().product::<usize>() * dtype.floats(),
            data.len(),
            "data length does not match shape {shape:?} and dtype {dtype:?}"
        );
        let stored = match dtype {
            DType::F32 => "float32",
            DType::C64 => "complex64",
            DType::F16 => "float16",
        };
        NpyArray {
            shape,
            dtype,
            data,
            stored,
        }
    }
}

/// Reads a real or complex array (see the module's documentation).
pub fn read(path: impl AsRef<Path>) -> Result<NpyArray, NpyError> {
    let path = path.as_ref();
    let bytes = fs::read(path).map_err(|source| NpyError::Io {
        path: path.into(),
        source,
    })?;
    parse(&bytes).map_err(|e| match e {
        ParseError::Format(reason) => NpyError::Format {
            path: path.into(),
            reason,
        },
        ParseError::Dtype(dtype) => NpyError::Dtype {
            path: path.into(),
            dtype,
        },
    })
}

#[derive(Debug)]
enum ParseError {
    Format(String),
    Dtype(String),
}

/// An array's values as f32, in C order, and what the file said of them.
struct Decoded {
    /// numpy's name of the stored dtype (`float64`, `complex64`, ...).
    name: &'static str,
    shape: Vec<usize>,
    complex: bool,
    data: Vec<f32>,
}

/// numpy's name of a scalar dtype we read, and whether it is complex.
fn dtype_name(t: &TypeStr) -> Option<(&'static str, bool)> {
    Some(match (t.type_char(), t.size_field()) {
        (TypeChar::Float, 2) => ("float16", false),
        (TypeChar::Float, 4) => ("float32", false),
        (TypeChar::Float, 8) => ("float64", false),
        (TypeChar::Int, 1) => ("int8", false),
        (TypeChar::Int, 2) => ("int16", false),
        (TypeChar::Int, 4) => ("int32", false),
        (TypeChar::Int, 8) => ("int64", false),
        (TypeChar::Uint, 1) => ("uint8", false),
        (TypeChar::Uint, 2) => ("uint16", false),
        (TypeChar::Uint, 4) => ("uint32", false),
        (TypeChar::Uint, 8) => ("uint64", false),
        (TypeChar::Bool, 1) => ("bool", false),
        (TypeChar::Complex, 8) => ("complex64", true),
        (TypeChar::Complex, 16) => ("complex128", true),
        _ => return None,
    })
}

/// The deepest bracket nesting a header may have (numpy writes 2).
const MAX_HEADER_NESTING: usize = 4;

/// Checks what npyz would trust: that the header lies within the file, and
/// that no product of the shape's dims overflows.
fn check_header(bytes: &[u8]) -> Result<(), ParseError> {
    let fmt = |m: String| ParseError::Format(m);
    if bytes.len() < 10 || !bytes.starts_with(b"\x93NUMPY") {
        return Err(fmt("missing the \\x93NUMPY magic".into()));
    }
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => match bytes.get(8..12) {
            Some(b) => (u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize, 12),
            None => return Err(fmt("truncated header".into())),
        },
        // npyz names it.
        _ => return Ok(()),
    };
    let text = bytes.get(start..start + len).ok_or_else(|| {
        fmt(format!(
            "truncated header ({len} bytes declared, {} present)",
            bytes.len() - start
        ))
    })?;
    // The header parser (py_literal, which npyz uses too) takes time
    // exponential in unbalanced nesting; numpy's dict nests two deep.
    let mut depth = 0usize;
    for &b in text {
        match b {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_HEADER_NESTING {
            return Err(fmt(format!(
                "the header nests brackets more than {MAX_HEADER_NESTING} deep"
            )));
        }
    }
    // Anything npyz would reject, npyz names; only a parsed shape is checked here.
    let Some(dict) = std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.trim_end().parse::<py_literal::Value>().ok())
    else {
        return Ok(());
    };
    let py_literal::Value::Dict(entries) = dict else {
        return Ok(());
    };
    // Every "shape" entry: npyz keeps the last of repeated keys.
    for (key, value) in &entries {
        let (py_literal::Value::String(key), py_literal::Value::Tuple(dims) | py_literal::Value::List(dims)) =
            (key, value)
        else {
            continue;
        };
        // Negative, over-long or non-integer dims: npyz names them.
        let shape: Option<Vec<u64>> = dims
            .iter()
            .map(|d| match d {
                py_literal::Value::Integer(d) => u64::try_from(d).ok(),
                _ => None,
            })
            .collect();
        let Some(shape) = shape.filter(|_| key == "shape") else {
            continue;
        };
        // Zero dims skipped: npyz forms the strides, partial products in both directions.
        if shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d.max(1)))
            .is_none()
        {
            return Err(fmt(format!("shape {shape:?} overflows")));
        }
    }
    Ok(())
}

fn invalid(e: io::Error) -> ParseError {
    ParseError::Format(e.to_string())
}

/// npyz's header errors in one line: the parser's diagram (`--> 1:65`, the
/// line, a caret, `= expected value`) becomes what was expected and where.
fn header_error(text: &str, bytes: &[u8]) -> ParseError {
    let first = text.lines().next().unwrap_or_default();
    let head = first.split("-->").next().unwrap_or_default();
    let head = head.trim_end().trim_end_matches(':');
    let head = head
        .strip_suffix("syntax error")
        .unwrap_or(head)
        .trim_end()
        .trim_end_matches(':');
    let column = text
        .split_once("--> ")
        .and_then(|(_, at)| at.split_whitespace().next()?.split(':').nth(1)?.parse::<usize>().ok());
    let expected = text.lines().find_map(|l| l.trim().strip_prefix("= "));
    // The header starts after the magic, the version and its length (2 bytes in version 1, else 4).
    let start = if bytes.get(6) == Some(&1) { 10 } else { 12 };
    // The diagram's source line (`1 | {...}`): a few characters either side of the column.
    let near = |c: usize| {
        let line = text.lines().find_map(|l| l.split_once(" | ").map(|(_, src)| src))?;
        let chars: Vec<char> = line.chars().collect();
        let from = c.saturating_sub(21).min(chars.len());
        let to = (c + 10).min(chars.len());
        Some(chars[from..to].iter().collect::<String>())
    };
    ParseError::Format(match (column, expected) {
        (Some(c), Some(what)) => format!(
            "{head}: {what} at byte {} (the header's column {c}, near `{}`)",
            start + c - 1,
            near(c).unwrap_or_default().trim()
        ),
        _ => first.trim().to_string(),
    })
}

fn decode(bytes: &[u8]) -> Result<Decoded, ParseError> {
    check_header(bytes)?;
    let mut data = bytes;
    let header = npyz::NpyHeader::from_reader(&mut data).map_err(|e| header_error(&e.to_string(), bytes))?;
    let npy_dtype = header.dtype();
    let descr = npy_dtype.descr().trim_matches('\'').to_string();
    let npyz::DType::Plain(type_str) = &npy_dtype else {
        return Err(ParseError::Dtype(descr));
    };
    let (name, complex) = dtype_name(type_str).ok_or_else(|| ParseError::Dtype(descr.clone()))?;
    let shape = header
        .shape()
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| ParseError::Format(format!("shape {:?} does not fit in memory", header.shape())))?;
    // Checked before anything is allocated: the data must be exactly what the shape needs.
    let need = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .and_then(|count| count.checked_mul(type_str.num_bytes()?))
        .ok_or_else(|| ParseError::Format(format!("shape {shape:?} overflows")))?;
    if data.len() != need {
        return Err(ParseError::Format(format!(
            "data holds {} bytes, shape {shape:?} of {descr} needs {need}",
            data.len()
        )));
    }
    let fortran = header.order() == Order::Fortran;
    let file = npyz::NpyFile::with_header(header, data);
    fn widen<T: npyz::Deserialize>(file: npyz::NpyFile<&[u8]>, f: impl Fn(T) -> f32) -> Result<Vec<f32>, ParseError> {
        // Element by element into the f32 vector: no copy of the stored type.
        let reader = file.data::<T>().map_err(|e| ParseError::Format(e.to_string()))?;
        let mut out = crate::buffer(reader.total_len() as usize).map_err(ParseError::Format)?;
        for v in reader {
            out.push(f(v.map_err(invalid)?));
        }
        Ok(out)
    }
    let values = match name {
        "float16" => widen(file, |v: half::f16| v.to_f32())?,
        "float32" => file.into_vec::<f32>().map_err(invalid)?,
        "float64" => widen(file, |v: f64| v as f32)?,
        "int8" => widen(file, |v: i8| v as f32)?,
        "int16" => widen(file, |v: i16| v as f32)?,
        "int32" => widen(file, |v: i32| v as f32)?,
        "int64" => widen(file, |v: i64| v as f32)?,
        "uint8" => widen(file, |v: u8| v as f32)?,
        "uint16" => widen(file, |v: u16| v as f32)?,
        "uint32" => widen(file, |v: u32| v as f32)?,
        "uint64" => widen(file, |v: u64| v as f32)?,
        "bool" => widen(file, |v: bool| v as u8 as f32)?,
        "complex64" => interleave(file.into_vec::<Complex<f32>>().map_err(invalid)?),
        "complex128" => interleave(
            file.into_vec::<Complex<f64>>()
                .map_err(invalid)?
                .into_iter()
                .map(|c| Complex::new(c.re as f32, c.im as f32))
                .collect(),
        ),
        _ => unreachable!("every name of dtype_name"),
    };
    let parts = if complex { 2 } else { 1 };
    let data = if fortran {
        fortran_to_c(&values, &shape, parts).map_err(ParseError::Format)?
    } else {
        values
    };
    Ok(Decoded {
        name,
        shape,
        complex,
        data,
    })
}

fn interleave(values: Vec<Complex<f32>>) -> Vec<f32> {
    values.into_iter().flat_map(|c| [c.re, c.im]).collect()
}

fn parse(bytes: &[u8]) -> Result<NpyArray, ParseError> {
    let d = decode(bytes)?;
    Ok(NpyArray {
        shape: d.shape,
        dtype: match (d.complex, d.name) {
            (true, _) => DType::C64,
            (false, "float16") => DType::F16,
            (false, _) => DType::F32,
        },
        data: d.data,
        stored: d.name,
    })
}

/// Any real array (float16/32/64, signed and unsigned integers, bool; either
/// byte order; C or Fortran order), its values as f32 in C order: the dataset
/// loaders' reader. Returns the numpy dtype's name beside the values.
pub fn parse_real(bytes: &[u8]) -> Result<(String, Vec<usize>, Vec<f32>), String> {
    let fail = |e: ParseError| match e {
        ParseError::Format(reason) => format!("not a valid .npy array: {reason}"),
        ParseError::Dtype(d) => format!("dtype '{d}' is not supported"),
    };
    let d = decode(bytes).map_err(fail)?;
    if d.complex {
        return Err(format!("dtype {} is not supported (a real array is needed)", d.name));
    }
    Ok((d.name.to_string(), d.shape, d.data))
}

/// Reorders column-major (Fortran) data of `shape`, `parts` floats per element,
/// into row-major order. A shape that does not describe exactly `data` (its
/// product overflows or differs from the length) is an error, never an
/// out-of-range index.
pub(crate) fn fortran_to_c(data: &[f32], shape: &[usize], parts: usize) -> Result<Vec<f32>, String> {
    let count = shape
        .iter()
        .try_fold(1usize, |acc, &n| acc.checked_mul(n))
        .filter(|count| count.checked_mul(parts) == Some(data.len()))
        .ok_or_else(|| {
            format!(
                "shape {shape:?} does not match the {} values stored",
                data.len() / parts
            )
        })?;
    let mut out = vec![0.0; data.len()];
    for c_index in 0..count {
        // The element's coordinates from its C index, then its Fortran index.
        let (mut rest, mut f_index, mut f_stride) = (c_index, 0, 1);
        let mut coords = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            coords[d] = rest % shape[d];
            rest /= shape[d];
        }
        for (d, &n) in shape.iter().enumerate() {
            f_index += coords[d] * f_stride;
            f_stride *= n;
        }
        out[c_index * parts..(c_index + 1) * parts].copy_from_slice(&data[f_index * parts..(f_index + 1) * parts]);
    }
    Ok(out)
}

/// Writes `data`, C order, little-endian, as `dtype`: npyz's header (version
/// 1.0 where it fits, data 64-byte aligned), then the values.
pub(crate) fn write_to(w: impl Write, shape: &[usize], dtype: DType, data: &[f32]) -> io::Result<()> {
    fn write_all<T: npyz::Serialize>(
        w: impl Write,
        shape: &[usize],
        dtype: DType,
        values: impl Iterator<Item = T>,
    ) -> io::Result<()> {
        let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
        let npy_dtype = npyz::DType::new_scalar(dtype.descr().parse().expect("a valid type string"));
        let mut out = npyz::WriteOptions::<T>::new()
            .dtype(npy_dtype)
            .shape(&shape)
            .writer(w)
            .begin_nd()?;
        out.extend(values)?;
        out.finish()
    }
    match dtype {
        DType::F32 => write_all(w, shape, dtype, data.iter().copied()),
        DType::C64 => write_all(w, shape, dtype, data.chunks_exact(2).map(|c| Complex::new(c[0], c[1]))),
        DType::F16 => write_all(w, shape, dtype, data.iter().map(|&v| half::f16::from_f32(v))),
    }
}

/// Serialises an array.
pub fn to_bytes(array: &NpyArray) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 + array.data.len() * 4);
    write_to(&mut out, &array.shape, array.dtype, &array.data).expect("NpyArray::new checked the length");
    out
}

/// Writes `path` through [`crate::output`] (a regular file replaced whole).
pub fn write(path: impl AsRef<Path>, array: &NpyArray) -> Result<(), NpyError> {
    let path = path.as_ref();
    crate::output::write_file(path, |w| write_to(w, &array.shape, array.dtype, &array.data)).map_err(|source| {
        NpyError::Io {
            path: path.into(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.npy` file's bytes with a hand-written header (as numpy writes it).
    fn npy(header: &str, data: &[u8]) -> Vec<u8> {
        let mut header = header.to_string();
        let unpadded = 10 + header.len() + 1;
        header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend(data);
        bytes
    }

    #[test]
    fn round_trip_every_dtype() {
        for (shape, dtype, bytes_each) in [
            (vec![3, 4], DType::F32, 4),
            (vec![5], DType::C64, 4),
            (vec![], DType::F32, 4),
            (vec![2, 3], DType::F16, 2),
        ] {
            let n = shape.iter().product::<usize>() * dtype.floats();
            let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 1.0).collect();
            let a = NpyArray::new(shape, dtype, data);
            let bytes = to_bytes(&a);
            assert_eq!((bytes.len() - a.data.len() * bytes_each) % 64, 0);
            assert_eq!(parse(&bytes).unwrap(), a);
        }
        // float16 keeps 11 significant bits: written rounded to nearest.
        let a = NpyArray::new(
            vec![2],
            DType::F16,
            vec![1.0 + 2f32.powi(-12), 1.0 + 3.0 * 2f32.powi(-11)],
        );
        assert_eq!(
            parse(&to_bytes(&a)).unwrap().data,
            vec![1.0, 1.0 + 2.0 * 2f32.powi(-10)]
        );
    }

    #[test]
    fn reads_fortran_ordered_arrays_in_c_order() {
        // np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)) stores 0 3 1 4 2 5.
        let data: Vec<u8> = [0.0f32, 3.0, 1.0, 4.0, 2.0, 5.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let a = parse(&npy(
            "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
            &data,
        ))
        .unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.data, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        // Complex too: each (re, im) pair moves whole.
        let data: Vec<u8> = [0.0f32, 0.5, 2.0, 2.5, 1.0, 1.5, 3.0, 3.5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let a = parse(&npy(
            "{'descr': '<c8', 'fortran_order': True, 'shape': (2, 2), }",
            &data,
        ))
        .unwrap();
        assert_eq!(a.data, vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]);
    }

    #[test]
    fn header_syntax_errors_are_one_line_naming_the_byte() {
        let bytes = npy("{'descr': '<f4', 'fortran_order': Flse, 'shape': (4,), }", &[0; 16]);
        let Some(ParseError::Format(e)) = decode(&bytes).err() else {
            panic!("a malformed header decoded");
        };
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("expected value at byte 44"), "{e}");
    }

    #[test]
    fn reads_numpy_written_header() {
        // Header exactly as numpy 1.x writes np.zeros((2, 3), np.complex64).
        let a = parse(&npy(
            "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }",
            &[0; 2 * 3 * 8],
        ))
        .unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.dtype, DType::C64);
        assert_eq!(a.data.len(), 12);
    }

    #[test]
    fn widens_float64_and_other_dtypes() {
        let values = [1.5f64, -2.25, 1e-3, 3.0e10];
        let le: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let be: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
        let want: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        for (descr, data) in [("<f8", &le), (">f8", &be)] {
            let bytes = npy(
                &format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2, 2), }}"),
                data,
            );
            let a = parse(&bytes).unwrap();
            assert_eq!(
                (a.dtype, &a.shape, &a.data),
                (DType::F32, &vec![2, 2], &want),
                "{descr}"
            );
            let (name, shape, data) = parse_real(&bytes).unwrap();
            assert_eq!((name.as_str(), shape, data), ("float64", vec![2, 2], want.clone()));
        }
        let ints: Vec<u8> = [-3i16, 7].iter().flat_map(|v| v.to_be_bytes()).collect();
        let (name, _, data) =
            parse_real(&npy("{'descr': '>i2', 'fortran_order': False, 'shape': (2,), }", &ints)).unwrap();
        assert_eq!((name.as_str(), data), ("int16", vec![-3.0, 7.0]));
        let (name, _, data) = parse_real(&npy(
            "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
            &[1, 0, 1],
        ))
        .unwrap();
        assert_eq!((name.as_str(), data), ("bool", vec![1.0, 0.0, 1.0]));
        // complex128 narrows to complex64; parse_real wants a real array.
        let c: Vec<u8> = [1.0f64, -1.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let bytes = npy("{'descr': '<c16', 'fortran_order': False, 'shape': (), }", &c);
        let a = parse(&bytes).unwrap();
        assert_eq!((a.dtype, a.shape.len(), a.data), (DType::C64, 0, vec![1.0, -1.0]));
        assert!(parse_real(&bytes).unwrap_err().contains("complex128"));
    }

    #[test]
    fn rejects_bad_files() {
        let good = to_bytes(&NpyArray::new(vec![4], DType::F32, vec![1.0; 4]));
        let err = |b: &[u8]| match parse(b) {
            Err(ParseError::Format(m)) => m,
            Err(ParseError::Dtype(d)) => format!("dtype {d}"),
            Ok(_) => panic!("accepted a bad file"),
        };
        assert!(err(&good[..good.len() - 1]).contains("needs 16"));
        assert!(err(b"PK\x03\x04 not numpy").contains("magic"));
        // Every truncation is an error.
        for cut in 0..good.len() {
            err(&good[..cut]);
        }
        let replace = |from: &[u8], to: &[u8]| {
            let at = good.windows(from.len()).position(|w| w == from).unwrap();
            let mut b = good.clone();
            b[at..at + to.len()].copy_from_slice(to);
            b
        };
        assert!(err(&replace(b"<f4", b"<U4")).contains("dtype <U4"));
        assert!(err(&replace(b"False", b"Maybe")).contains("fortran_order"));
        // A shape whose product overflows, or that the data cannot hold: errors
        // before anything of that size is allocated.
        for shape in ["(4294967296, 4294967296, 16)", "(0, 4294967296, 4294967296, 2)"] {
            let m = err(&npy(
                &format!("{{'descr': '<f4', 'fortran_order': True, 'shape': {shape}, }}"),
                &[0; 16],
            ));
            assert!(m.contains("overflows"), "{m}");
        }
        let m = err(&npy(
            "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }",
            &[0; 16],
        ));
        assert!(m.contains("needs 8000000000000"), "{m}");
        // A header longer than the file.
        let mut b = good.clone();
        b[8..10].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(err(&b).contains("truncated header"));
        let mut b = b"\x93NUMPY\x02\x00".to_vec();
        b.extend(u32::MAX.to_le_bytes());
        assert!(err(&b).contains("truncated header"));
        // Unbalanced nesting, which the header parser takes exponential time
        // over (14 braces ran past 100 s), is refused at once.
        let started = std::time::Instant::now();
        let m = err(&npy(
            &format!(
                "{}'descr': '<f4', 'fortran_order': False, 'shape': (4,), }}",
                "{".repeat(14)
            ),
            &[0; 16],
        ));
        assert!(m.contains("nests brackets") && started.elapsed().as_secs() < 1, "{m}");
    }
}
