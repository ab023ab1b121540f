//! scipy.sparse's `.npz` files (`scipy.sparse.save_npz` / `load_npz`): a zip
//! of `.npy` members — `format` (`b"csr"` / `b"csc"` / `b"coo"`), `shape`,
//! `data`, and `indices` + `indptr` or `row` + `col`.

use crate::error::{Result, SparseError};
use crate::matrix::{CooMatrix, CscMatrix, CsrMatrix};
use crate::scalar::Scalar;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

/// A matrix read from `.npz`, in the format it was saved in.
#[derive(Debug, Clone, PartialEq)]
pub enum NpzMatrix<T> {
    /// `format = csr`.
    Csr(CsrMatrix<T>),
    /// `format = csc`.
    Csc(CscMatrix<T>),
    /// `format = coo`.
    Coo(CooMatrix<T>),
}

impl<T: Scalar> NpzMatrix<T> {
    /// As CSR, whatever the stored format.
    pub fn into_csr(self) -> CsrMatrix<T> {
        match self {
            NpzMatrix::Csr(m) => m,
            NpzMatrix::Csc(m) => m.to_csr(),
            NpzMatrix::Coo(m) => m.to_csr(),
        }
    }
}

fn bad(msg: impl Into<String>) -> SparseError {
    SparseError::Npz(msg.into())
}

/// One parsed `.npy` array: dtype descr, shape, raw little-endian data.
struct Npy {
    descr: String,
    shape: Vec<usize>,
    data: Vec<u8>,
}

fn parse_npy(name: &str, b: &[u8]) -> Result<Npy> {
    if b.len() < 10 || &b[..6] != b"\x93NUMPY" {
        return Err(bad(format!("{name}: not a .npy member (bad magic)")));
    }
    let (hlen, start): (usize, usize) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
        2 | 3 if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        v => return Err(bad(format!("{name}: unsupported .npy version {v}"))),
    };
    let end = start
        .checked_add(hlen)
        .filter(|&e| e <= b.len())
        .ok_or_else(|| {
            bad(format!(
                "{name}: header of {hlen} bytes runs past the member"
            ))
        })?;
    let header =
        std::str::from_utf8(&b[start..end]).map_err(|_| bad(format!("{name}: header not text")))?;
    let field = |key: &str| -> Result<&str> {
        let at = header
            .find(&format!("'{key}':"))
            .ok_or_else(|| bad(format!("{name}: header lacks '{key}'")))?;
        Ok(header[at + key.len() + 3..].trim_start())
    };
    let descr = field("descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or_else(|| bad(format!("{name}: bad descr")))?
        .to_string();
    if field("fortran_order")?.starts_with("True") {
        return Err(bad(format!("{name}: Fortran order is not supported")));
    }
    let shape_text = field("shape")?;
    let inner = shape_text
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad(format!("{name}: bad shape")))?;
    let shape = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|_| bad(format!("{name}: bad dim `{s}`")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Npy {
        descr,
        shape,
        data: b[end..].to_vec(),
    })
}

impl Npy {
    fn count(&self, name: &str) -> Result<usize> {
        self.shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad(format!("{name}: shape {:?} overflows", self.shape)))
    }

    fn check_len(&self, name: &str, width: usize) -> Result<usize> {
        let n = self.count(name)?;
        if n.checked_mul(width) != Some(self.data.len()) {
            return Err(bad(format!(
                "{name}: {} data bytes for shape {:?} of {} ({} expected)",
                self.data.len(),
                self.shape,
                self.descr,
                n.saturating_mul(width)
            )));
        }
        Ok(n)
    }

    fn ints(&self, name: &str) -> Result<Vec<usize>> {
        let width = match self.descr.as_str() {
            "<i4" | "<u4" => 4,
            "<i8" | "<u8" => 8,
            d => return Err(bad(format!("{name}: dtype {d} is not an integer type"))),
        };
        self.check_len(name, width)?;
        self.data
            .chunks_exact(width)
            .enumerate()
            .map(|(i, c)| {
                let v = if width == 4 {
                    if self.descr == "<i4" {
                        i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64
                    } else {
                        u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64
                    }
                } else {
                    i64::from_le_bytes(c.try_into().expect("8 bytes"))
                };
                usize::try_from(v).map_err(|_| bad(format!("{name}[{i}] = {v} is negative")))
            })
            .collect()
    }

    fn floats<T: Scalar>(&self, name: &str) -> Result<Vec<T>> {
        match self.descr.as_str() {
            "<f8" => {
                self.check_len(name, 8)?;
                Ok(self
                    .data
                    .chunks_exact(8)
                    .map(|c| T::from_f64(f64::from_le(c)))
                    .collect())
            }
            "<f4" => {
                self.check_len(name, 4)?;
                Ok(self
                    .data
                    .chunks_exact(4)
                    .map(|c| T::from_f64(f32::from_le(c) as f64))
                    .collect())
            }
            d => Err(bad(format!("{name}: dtype {d} is not f32 / f64"))),
        }
    }
}

/// Reads a scipy `.npz` sparse matrix (compressed or not); values convert
/// to `T`. Every member is checked (dtype, shape, lengths) and the arrays
/// validated as the format's constructor does.
pub fn load_npz<T: Scalar>(path: impl AsRef<Path>) -> Result<NpzMatrix<T>> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let file_len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| bad(format!("{}: not a zip: {e}", path.display())))?;
    let mut members: HashMap<String, Npy> = HashMap::new();
    for i in 0..zip.len() {
        let mut f = zip
            .by_index(i)
            .map_err(|e| bad(format!("member {i}: {e}")))?;
        let name = f.name().trim_end_matches(".npy").to_string();
        // Deflate can expand a lot, but not past what the entry declares.
        let declared = f.size();
        if declared > (1 << 34) {
            return Err(bad(format!(
                "{name}: declares {declared} bytes (file is {file_len})"
            )));
        }
        let mut buf = Vec::with_capacity(declared.min(1 << 24) as usize);
        (&mut f)
            .take(declared)
            .read_to_end(&mut buf)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        members.insert(name.clone(), parse_npy(&name, &buf)?);
    }
    let get = |k: &str| {
        members
            .get(k)
            .ok_or_else(|| bad(format!("missing member `{k}`")))
    };
    let format = get("format")?;
    let fmt = String::from_utf8_lossy(&format.data)
        .trim_end_matches(['\0', ' '])
        .replace('\0', "");
    let shape = get("shape")?.ints("shape")?;
    let [nrows, ncols] = shape[..] else {
        return Err(bad(format!("shape has {} dims, expected 2", shape.len())));
    };
    let data = get("data")?.floats::<T>("data")?;
    Ok(match fmt.as_str() {
        "csr" => NpzMatrix::Csr(CsrMatrix::try_new(
            nrows,
            ncols,
            get("indptr")?.ints("indptr")?,
            get("indices")?.ints("indices")?,
            data,
        )?),
        "csc" => NpzMatrix::Csc(CscMatrix::try_new(
            nrows,
            ncols,
            get("indptr")?.ints("indptr")?,
            get("indices")?.ints("indices")?,
            data,
        )?),
        "coo" => NpzMatrix::Coo(CooMatrix::try_new(
            nrows,
            ncols,
            get("row")?.ints("row")?,
            get("col")?.ints("col")?,
            data,
        )?),
        f => return Err(bad(format!("format `{f}` is not csr / csc / coo"))),
    })
}

fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Pad so the data starts on a 64-byte boundary, newline-terminated.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((header.len() as u16).to_le_bytes());
    out.extend(header.as_bytes());
    out.extend(data);
    out
}

fn int_member(v: &[usize]) -> (&'static str, Vec<u8>) {
    if v.iter().all(|&x| x <= i32::MAX as usize) {
        (
            "<i4",
            v.iter().flat_map(|&x| (x as i32).to_le_bytes()).collect(),
        )
    } else {
        (
            "<i8",
            v.iter().flat_map(|&x| (x as i64).to_le_bytes()).collect(),
        )
    }
}

/// Writes `m` as scipy's `save_npz(..., compressed=False)` does (int32
/// indices when they fit, else int64); `scipy.sparse.load_npz` reads it.
pub fn save_npz<T: Scalar>(path: impl AsRef<Path>, m: &NpzMatrix<T>) -> Result<()> {
    type Members<'a> = Vec<(&'a str, std::borrow::Cow<'a, [usize]>)>;
    let wide = |ix: &[u32]| {
        ix.iter()
            .map(|&j| j as usize)
            .collect::<Vec<usize>>()
            .into()
    };
    let (fmt, shape, arrays): (&[u8], (usize, usize), Members) = match m {
        NpzMatrix::Csr(c) => (
            b"csr",
            c.shape(),
            vec![
                ("indices", wide(c.indices())),
                ("indptr", c.indptr().into()),
            ],
        ),
        NpzMatrix::Csc(c) => (
            b"csc",
            c.shape(),
            vec![
                ("indices", wide(c.indices())),
                ("indptr", c.indptr().into()),
            ],
        ),
        NpzMatrix::Coo(c) => (
            b"coo",
            c.shape(),
            vec![("row", c.rows().into()), ("col", c.cols().into())],
        ),
    };
    let values: &[T] = match m {
        NpzMatrix::Csr(c) => c.values(),
        NpzMatrix::Csc(c) => c.values(),
        NpzMatrix::Coo(c) => c.values(),
    };
    let path = path.as_ref();
    let io = |e: std::io::Error| bad(format!("{}: {e}", path.display()));
    let file = std::fs::File::create(path).map_err(io)?;
    let mut zip = zip::ZipWriter::new(file);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let mut put = |name: &str, bytes: Vec<u8>| -> Result<()> {
        zip.start_file(format!("{name}.npy"), opts)
            .map_err(|e| bad(format!("{name}: {e}")))?;
        zip.write_all(&bytes).map_err(io)
    };
    for (name, idx) in arrays {
        let (descr, bytes) = int_member(&idx);
        put(name, npy(descr, &[idx.len()], &bytes))?;
    }
    let data: Vec<u8> = values.iter().flat_map(|v| v.to_le()).collect();
    put("data", npy(T::NPY_DESCR, &[values.len()], &data))?;
    let sh: Vec<u8> = [shape.0 as i64, shape.1 as i64]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    put("shape", npy("<i8", &[2], &sh))?;
    put("format", npy("|S3", &[], fmt))?;
    zip.finish()
        .map_err(|e| bad(format!("{}: {e}", path.display())))?;
    Ok(())
}
