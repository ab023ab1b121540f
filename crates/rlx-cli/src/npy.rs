//! numpy `.npy` files (format versions 1.0 - 3.0, C order, little-endian)
//! to and from [`HostTensor`]: `bool`, `u8`, `i8`, `u16`, `i16`, `i32`,
//! `i64`, `u32`, `u64`, `f16`, `f32`, `f64` (the dtypes RLX holds).
//!
//! Format: <https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html>.

use rlx::{DType, HostTensor};
use std::path::Path;
use thiserror::Error;

const MAGIC: &[u8] = b"\x93NUMPY";

/// Why a `.npy` file could not be read or written.
#[derive(Debug, Error)]
pub enum NpyError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not a `.npy` file RLX reads.
    #[error("{path}: not a .npy file RLX can read: {reason}")]
    Format {
        /// The file.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// The tensor's dtype has no `.npy` descriptor here.
    #[error("dtype {0:?} cannot be written to .npy")]
    Unsupported(DType),
}

/// The numpy descriptor of `dtype` (little-endian), if it has one.
fn descr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::U16 => "<u2",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::U32 => "<u4",
        DType::I64 => "<i8",
        DType::U64 => "<u8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        _ => return None,
    })
}

/// The dtype of a numpy descriptor (`<f4`, `|b1`, `=i8`, ...).
fn dtype_of(descr: &str) -> Option<DType> {
    let (order, code) = descr.split_at(1.min(descr.len()));
    let little =
        matches!(order, "<" | "|" | "=") && (order != "=" || cfg!(target_endian = "little"));
    if !little {
        return None;
    }
    Some(match code {
        "b1" => DType::Bool,
        "u1" => DType::U8,
        "i1" => DType::I8,
        "u2" => DType::U16,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "u4" => DType::U32,
        "i8" => DType::I64,
        "u8" => DType::U64,
        "f2" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => return None,
    })
}

/// The `.npy` bytes of `t` (format 1.0, or 2.0 for a header over 64 KiB).
pub fn to_npy_bytes(t: &HostTensor) -> Result<Vec<u8>, NpyError> {
    let descr = descr(t.dtype()).ok_or(NpyError::Unsupported(t.dtype()))?;
    let shape = match t.dims() {
        [n] => format!("({n},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic, version, header length, header and its newline end on a
    // multiple of 64 bytes (numpy pads with spaces).
    let long = header.len() + 1 + 10 > u16::MAX as usize;
    let prefix = if long { 12 } else { 10 };
    let pad = (64 - (prefix + header.len() + 1) % 64) % 64;
    header.push_str(&" ".repeat(pad));
    header.push('\n');
    let mut out = Vec::with_capacity(prefix + header.len() + t.bytes().len());
    out.extend_from_slice(MAGIC);
    if long {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    } else {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(t.bytes());
    Ok(out)
}

/// Writes `t` to `path` as `.npy`.
pub fn write_npy(path: impl AsRef<Path>, t: &HostTensor) -> Result<(), NpyError> {
    let path = path.as_ref();
    std::fs::write(path, to_npy_bytes(t)?).map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Reads the `.npy` file at `path`.
pub fn read_npy(path: impl AsRef<Path>) -> Result<HostTensor, NpyError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
        path: name.clone(),
        source,
    })?;
    from_npy_bytes(&bytes).map_err(|reason| NpyError::Format { path: name, reason })
}

/// Parses `.npy` bytes; the error says what is wrong.
pub fn from_npy_bytes(bytes: &[u8]) -> Result<HostTensor, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("missing the \\x93NUMPY magic".into());
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10usize),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("format version {v}.{} is not 1, 2 or 3", bytes[7])),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| format!("header of {header_len} bytes runs past the end of the file"))?;
    let header = std::str::from_utf8(&bytes[start..end])
        .map_err(|_| "the header is not text".to_string())?;
    let descr = field(header, "descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let dtype = dtype_of(descr).ok_or_else(|| {
        format!("dtype '{descr}' is not supported (little-endian bool, ints, f16, f32, f64)")
    })?;
    if field(header, "fortran_order")? != "False" {
        return Err(
            "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)".into(),
        );
    }
    let dims = parse_shape(field(header, "shape")?)?;
    let numel = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or("the shape's element count overflows")?;
    let want = numel
        .checked_mul(dtype.size_bytes())
        .ok_or("the shape's byte count overflows")?;
    let data = &bytes[end..];
    if data.len() != want {
        return Err(format!(
            "shape {dims:?} of {descr} needs {want} data bytes, the file has {}",
            data.len()
        ));
    }
    HostTensor::from_bytes(dtype, &dims, data.to_vec()).map_err(|e| e.to_string())
}

/// The text of `'key': value` in a header dict, up to the next top-level comma.
fn field<'a>(header: &'a str, key: &str) -> Result<&'a str, String> {
    let at = header
        .find(&format!("'{key}'"))
        .ok_or_else(|| format!("the header has no '{key}'"))?;
    let rest = header[at + key.len() + 2..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| format!("'{key}' has no value"))?
        .trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')').map(|i| i + 1)
    } else {
        rest.find([',', '}'])
    }
    .ok_or_else(|| format!("'{key}' is not terminated"))?;
    Ok(rest[..end].trim())
}

/// `(2, 3)`, `(4,)` or `()` as dims.
fn parse_shape(s: &str) -> Result<Vec<usize>, String> {
    let inner = s
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| format!("shape {s} is not a tuple"))?;
    inner
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.trim_end_matches('L').parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("shape {s} is not a tuple of sizes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_dtype_and_rank() {
        let cases = [
            HostTensor::from_vec(vec![1.5f32, -2.0, 3.25, 0.0, 7.0, 8.0], &[2, 3]).unwrap(),
            HostTensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap(),
            HostTensor::from_vec(vec![-1i64, 2, 3, 4], &[1, 2, 2]).unwrap(),
            HostTensor::from_vec(vec![7i32], &[]).unwrap(),
        ];
        for t in cases {
            let b = to_npy_bytes(&t).unwrap();
            let hdr = 10 + u16::from_le_bytes([b[8], b[9]]) as usize;
            assert_eq!(hdr % 64, 0, "header pads to 64 bytes");
            let back = from_npy_bytes(&b).unwrap();
            assert_eq!(
                (back.dtype(), back.dims(), back.bytes()),
                (t.dtype(), t.dims(), t.bytes())
            );
        }
    }

    #[test]
    fn refuses_what_it_cannot_read_with_the_reason() {
        assert!(from_npy_bytes(b"hello world")
            .unwrap_err()
            .contains("magic"));
        let mut b = to_npy_bytes(&HostTensor::from_vec(vec![1f32, 2.0], &[2]).unwrap()).unwrap();
        b.pop();
        assert!(from_npy_bytes(&b)
            .unwrap_err()
            .contains("needs 8 data bytes"));
        b.push(0);
        let at = b.windows(3).position(|w| w == b"<f4").unwrap();
        b[at] = b'>';
        let err = from_npy_bytes(&b).unwrap_err();
        assert!(err.contains("'>f4' is not supported"), "{err}");
    }
}
