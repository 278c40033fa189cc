//! NumPy `.npy` arrays of float32 (`<f4`) and complex64 (`<c8`), C order.
//!
//! Complex data are kept interleaved (re, im), the layout of
//! `torch.view_as_real`, so a `<c8` array of shape `S` holds `2·prod(S)` floats.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

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
    #[error("{path}: dtype '{dtype}' is not supported (expected float32 '<f4' or complex64 '<c8')")]
    Dtype { path: PathBuf, dtype: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    F32,
    C64,
}

impl DType {
    fn descr(self) -> &'static str {
        match self {
            DType::F32 => "<f4",
            DType::C64 => "<c8",
        }
    }

    /// f32 values per element.
    pub fn floats(self) -> usize {
        match self {
            DType::F32 => 1,
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
}

impl NpyArray {
    pub fn new(shape: Vec<usize>, dtype: DType, data: Vec<f32>) -> Self {
        assert_eq!(
            shape.iter().product::<usize>() * dtype.floats(),
            data.len(),
            "data length does not match shape {shape:?} and dtype {dtype:?}"
        );
        NpyArray { shape, dtype, data }
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

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

enum ParseError {
    Format(String),
    Dtype(String),
}

/// A parsed header: the element type's descr, order and shape, and where the data start.
struct Header {
    descr: String,
    fortran: bool,
    shape: Vec<usize>,
    data_start: usize,
}

fn parse_header(bytes: &[u8]) -> Result<Header, ParseError> {
    let fmt = |m: &str| ParseError::Format(m.to_string());
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(fmt("missing the \\x93NUMPY magic"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(fmt("truncated header"));
            }
            (
                u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
                12,
            )
        }
        v => return Err(ParseError::Format(format!("unknown format version {v}"))),
    };
    let header = bytes
        .get(start..start + header_len)
        .ok_or_else(|| fmt("truncated header"))?;
    let header = std::str::from_utf8(header).map_err(|_| fmt("header is not text"))?;
    let descr = dict_value(header, "descr").ok_or_else(|| fmt("header has no 'descr'"))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"').to_string();
    let fortran = match dict_value(header, "fortran_order").as_deref() {
        Some("False") => false,
        Some("True") => true,
        _ => return Err(fmt("header has no valid 'fortran_order'")),
    };
    let shape_text = dict_value(header, "shape").ok_or_else(|| fmt("header has no 'shape'"))?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| fmt("'shape' is not a tuple"))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| ParseError::Format(format!("bad dimension '{s}' in shape")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Header {
        descr,
        fortran,
        shape,
        data_start: start + header_len,
    })
}

/// The data of `header`, `width` bytes per value, decoded to f32 in C order
/// (`parts` values per element).
fn decode(
    bytes: &[u8],
    header: &Header,
    width: usize,
    parts: usize,
    value: impl Fn(&[u8]) -> f32,
) -> Result<Vec<f32>, ParseError> {
    let count = header
        .shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .and_then(|c| c.checked_mul(parts))
        .ok_or_else(|| ParseError::Format("shape overflows".into()))?;
    let body = &bytes[header.data_start..];
    if body.len() != count * width {
        return Err(ParseError::Format(format!(
            "data holds {} bytes, shape {:?} of {} needs {}",
            body.len(),
            header.shape,
            header.descr,
            count * width
        )));
    }
    let data: Vec<f32> = body.chunks_exact(width).map(value).collect();
    Ok(if header.fortran {
        fortran_to_c(&data, &header.shape, parts)
    } else {
        data
    })
}

fn parse(bytes: &[u8]) -> Result<NpyArray, ParseError> {
    let header = parse_header(bytes)?;
    let dtype = match header.descr.as_str() {
        "<f4" | "|f4" => DType::F32,
        "<c8" => DType::C64,
        other => return Err(ParseError::Dtype(other.to_string())),
    };
    let data = decode(bytes, &header, 4, dtype.floats(), |c| {
        f32::from_le_bytes(c.try_into().unwrap())
    })?;
    Ok(NpyArray {
        shape: header.shape,
        dtype,
        data,
    })
}

/// Any real little-endian array (float16/32/64, signed and unsigned integers,
/// bool), its values widened to f32: the dataset loaders' reader. Returns the
/// numpy dtype's name beside the values.
pub fn parse_real(bytes: &[u8]) -> Result<(String, Vec<usize>, Vec<f32>), String> {
    let fail = |e: ParseError| match e {
        ParseError::Format(reason) => format!("not a valid .npy array: {reason}"),
        ParseError::Dtype(d) => format!("dtype '{d}' is not supported"),
    };
    let header = parse_header(bytes).map_err(fail)?;
    type Decoder = fn(&[u8]) -> f32;
    let (name, width, value): (&str, usize, Decoder) = match header.descr.trim_start_matches(['<', '|', '=']) {
        "f2" => ("float16", 2, |c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()),
        "f4" => ("float32", 4, |c| f32::from_le_bytes(c.try_into().unwrap())),
        "f8" => ("float64", 8, |c| f64::from_le_bytes(c.try_into().unwrap()) as f32),
        "i1" => ("int8", 1, |c| c[0] as i8 as f32),
        "i2" => ("int16", 2, |c| i16::from_le_bytes([c[0], c[1]]) as f32),
        "i4" => ("int32", 4, |c| i32::from_le_bytes(c.try_into().unwrap()) as f32),
        "i8" => ("int64", 8, |c| i64::from_le_bytes(c.try_into().unwrap()) as f32),
        "u1" => ("uint8", 1, |c| c[0] as f32),
        "u2" => ("uint16", 2, |c| u16::from_le_bytes([c[0], c[1]]) as f32),
        "u4" => ("uint32", 4, |c| u32::from_le_bytes(c.try_into().unwrap()) as f32),
        "u8" => ("uint64", 8, |c| u64::from_le_bytes(c.try_into().unwrap()) as f32),
        "b1" => ("bool", 1, |c| (c[0] != 0) as u8 as f32),
        other => return Err(fail(ParseError::Dtype(other.to_string()))),
    };
    let data = decode(bytes, &header, width, 1, value).map_err(fail)?;
    Ok((name.to_string(), header.shape, data))
}

/// Reorders column-major (Fortran) data of `shape`, `parts` floats per element,
/// into row-major order.
pub(crate) fn fortran_to_c(data: &[f32], shape: &[usize], parts: usize) -> Vec<f32> {
    let count: usize = shape.iter().product();
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
    out
}

/// The raw text of `'key': value` in a header dict (tuples kept whole).
fn dict_value(header: &str, key: &str) -> Option<String> {
    let at = header.find(&format!("'{key}'"))?;
    let rest = header[at + key.len() + 2..]
        .trim_start()
        .strip_prefix(':')?
        .trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(rest[..end].trim().to_string())
}

/// Serialises an array in format version 1.0.
pub fn to_bytes(array: &NpyArray) -> Vec<u8> {
    let shape = match array.shape.len() {
        1 => format!("({},)", array.shape[0]),
        _ => format!(
            "({})",
            array.shape.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
        ),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
        array.dtype.descr(),
        shape
    );
    // Pad with spaces so the data starts 64-byte aligned; the header ends in '\n'.
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + array.data.len() * 4);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for v in &array.data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Writes atomically: a temporary file beside `path`, renamed into place.
pub fn write(path: impl AsRef<Path>, array: &NpyArray) -> Result<(), NpyError> {
    let path = path.as_ref();
    let io = |source| NpyError::Io {
        path: path.into(),
        source,
    };
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    let result = fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&to_bytes(array)).and_then(|_| f.sync_all()))
        .and_then(|_| fs::rename(&tmp, path));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_both_dtypes() {
        for (shape, dtype) in [(vec![3, 4], DType::F32), (vec![5], DType::C64), (vec![], DType::F32)] {
            let n = shape.iter().product::<usize>() * dtype.floats();
            let data: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 1.0).collect();
            let a = NpyArray::new(shape, dtype, data);
            let bytes = to_bytes(&a);
            assert_eq!((bytes.len() - a.data.len() * 4) % 64, 0);
            let b = match parse(&bytes) {
                Ok(b) => b,
                Err(_) => panic!("round trip failed"),
            };
            assert_eq!(a, b);
        }
    }

    #[test]
    fn reads_fortran_ordered_arrays_in_c_order() {
        // np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)) stores 0 3 1 4 2 5.
        let mut bytes = b"\x93NUMPY\x01\x00v\x00".to_vec();
        let mut header = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }".to_string();
        header.push_str(&" ".repeat(118 - header.len() - 1));
        header.push('\n');
        bytes.extend_from_slice(header.as_bytes());
        for v in [0.0f32, 3.0, 1.0, 4.0, 2.0, 5.0] {
            bytes.extend(v.to_le_bytes());
        }
        let a = parse(&bytes).ok().unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.data, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn reads_numpy_written_header() {
        // Header exactly as numpy 1.x writes np.zeros((2, 3), np.complex64).
        let mut bytes = b"\x93NUMPY\x01\x00v\x00".to_vec();
        let mut header = "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3), }".to_string();
        header.push_str(&" ".repeat(118 - header.len() - 1));
        header.push('\n');
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend(std::iter::repeat_n(0u8, 2 * 3 * 8));
        let a = parse(&bytes).ok().unwrap();
        assert_eq!(a.shape, vec![2, 3]);
        assert_eq!(a.dtype, DType::C64);
        assert_eq!(a.data.len(), 12);
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
        let replace = |from: &[u8], to: &[u8]| {
            let at = good.windows(from.len()).position(|w| w == from).unwrap();
            let mut b = good.clone();
            b[at..at + to.len()].copy_from_slice(to);
            b
        };
        assert!(err(&replace(b"<f4", b"<f8")).contains("dtype <f8"));
        assert!(err(&replace(b"False", b"Maybe")).contains("fortran_order"));
    }
}
