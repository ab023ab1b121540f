//! Parsing the header, metadata and tensor infos of a GGUF file: [`GgufContent`].
//!
//! Every count and length is checked against the bytes that remain before
//! anything is allocated for it, so a hostile header cannot make the parser
//! allocate more than a small multiple of the file's own size.

use crate::error::{GgufError, Result};
use crate::types::GgmlType;
use crate::value::{Array, Metadata, Value, ValueType};
use std::collections::HashMap;

/// `"GGUF"` as stored at offset 0.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// The version the writer emits by default.
pub const GGUF_VERSION: u32 = 3;
/// The data alignment when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml's `GGML_MAX_DIMS`: tensors have at most this many dims.
pub const MAX_DIMS: usize = 4;
/// How deep metadata arrays may nest (arrays of arrays of ...).
pub const MAX_ARRAY_DEPTH: usize = 64;
/// The metadata key holding the data alignment.
pub const KEY_ALIGNMENT: &str = "general.alignment";

/// A bounded little-endian reader over the file bytes.
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// GGUF v1 stores counts and lengths as `u32`.
    v1: bool,
}

impl<'a> Cursor<'a> {
    fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor {
            buf,
            pos: 0,
            v1: false,
        }
    }

    fn pos(&self) -> u64 {
        self.pos as u64
    }

    fn remaining(&self) -> u64 {
        (self.buf.len() - self.pos) as u64
    }

    fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(GgufError::Truncated {
                what: what(),
                offset: self.pos(),
                needed: n,
                available: self.remaining(),
            });
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &dyn Fn() -> String) -> Result<[u8; N]> {
        let s = self.take(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A count or length: `u32` in v1, `u64` after.
    fn count(&mut self, what: &dyn Fn() -> String) -> Result<u64> {
        if self.v1 {
            self.u32(what).map(u64::from)
        } else {
            self.u64(what)
        }
    }

    fn len_width(&self) -> u64 {
        if self.v1 {
            4
        } else {
            8
        }
    }

    /// Fails unless `count` items of at least `min_each` bytes fit in what remains.
    fn check_fits(
        &self,
        count: u64,
        min_each: u64,
        at: u64,
        what: &dyn Fn() -> String,
    ) -> Result<()> {
        let need = u128::from(count) * u128::from(min_each);
        if need > u128::from(self.remaining()) {
            return Err(GgufError::CountTooLarge {
                what: what(),
                offset: at,
                count,
                min_bytes: need,
                available: self.remaining(),
            });
        }
        Ok(())
    }

    fn string(&mut self, what: &dyn Fn() -> String) -> Result<String> {
        let at = self.pos();
        let len = self.count(&|| format!("length of {}", what()))?;
        self.check_fits(len, 1, at, &|| format!("length of {}", what()))?;
        let start = self.pos();
        let bytes = self.take(len, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(GgufError::InvalidUtf8 {
                what: what(),
                offset: start,
            }),
        }
    }

    /// The fewest bytes one value of `ty` can take.
    fn min_value_bytes(&self, ty: ValueType) -> u64 {
        match ty.fixed_size() {
            Some(n) => n as u64,
            None if ty == ValueType::String => self.len_width(),
            None => 4 + self.len_width(),
        }
    }

    fn value(&mut self, ty: ValueType, key: &str, depth: usize) -> Result<Value> {
        let what = &|| format!("{ty} value of key '{key}'");
        Ok(match ty {
            ValueType::U8 => Value::U8(self.array::<1>(what)?[0]),
            ValueType::I8 => Value::I8(self.array::<1>(what)?[0] as i8),
            ValueType::U16 => Value::U16(u16::from_le_bytes(self.array(what)?)),
            ValueType::I16 => Value::I16(i16::from_le_bytes(self.array(what)?)),
            ValueType::U32 => Value::U32(u32::from_le_bytes(self.array(what)?)),
            ValueType::I32 => Value::I32(i32::from_le_bytes(self.array(what)?)),
            ValueType::F32 => Value::F32(f32::from_le_bytes(self.array(what)?)),
            ValueType::U64 => Value::U64(u64::from_le_bytes(self.array(what)?)),
            ValueType::I64 => Value::I64(i64::from_le_bytes(self.array(what)?)),
            ValueType::F64 => Value::F64(f64::from_le_bytes(self.array(what)?)),
            ValueType::Bool => {
                let at = self.pos();
                match self.array::<1>(what)?[0] {
                    0 => Value::Bool(false),
                    1 => Value::Bool(true),
                    value => {
                        return Err(GgufError::InvalidBool {
                            value,
                            offset: at,
                            key: key.into(),
                        })
                    }
                }
            }
            ValueType::String => {
                Value::String(self.string(&|| format!("string value of key '{key}'"))?)
            }
            ValueType::Array => Value::Array(self.array_value(key, depth + 1)?),
        })
    }

    fn value_type(&mut self, key: &str, what: &dyn Fn() -> String) -> Result<ValueType> {
        let at = self.pos();
        let id = self.u32(what)?;
        ValueType::from_id(id).ok_or_else(|| GgufError::UnknownValueType {
            id,
            offset: at,
            key: key.into(),
        })
    }

    fn array_value(&mut self, key: &str, depth: usize) -> Result<Array> {
        let at = self.pos();
        if depth > MAX_ARRAY_DEPTH {
            return Err(GgufError::NestingTooDeep {
                offset: at,
                key: key.into(),
                max: MAX_ARRAY_DEPTH,
            });
        }
        let elem = self.value_type(key, &|| format!("array element type of key '{key}'"))?;
        let len_at = self.pos();
        let len_what = || format!("array length of key '{key}'");
        let n = self.count(&len_what)?;
        self.check_fits(n, self.min_value_bytes(elem), len_at, &len_what)?;
        // `n` values fit in the file, so `n` is at most the file length; the
        // reservation is capped anyway so memory grows with values actually read.
        let mut values = Vec::with_capacity((n as usize).min(1 << 16));
        for _ in 0..n {
            values.push(self.value(elem, key, depth)?);
        }
        Ok(Array::from_parts(elem, values))
    }
}

/// One tensor's entry in the tensor-info table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    name: String,
    dims: Vec<u64>,
    ggml_type: GgmlType,
    offset: u64,
    abs_offset: u64,
    n_elements: u64,
    n_bytes: u64,
}

impl TensorInfo {
    /// The tensor's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Dims as stored (ggml's `ne`): innermost, fastest-varying first.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// Row-major shape (numpy / [`rlx_ir::HostTensor`] order): `dims` reversed.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }

    /// Element / block type.
    pub fn ggml_type(&self) -> GgmlType {
        self.ggml_type
    }

    /// Offset of the data from the start of the data section.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Offset of the data from the start of the file.
    pub fn file_offset(&self) -> u64 {
        self.abs_offset
    }

    /// Element count (product of dims).
    pub fn n_elements(&self) -> u64 {
        self.n_elements
    }

    /// Bytes of data.
    pub fn n_bytes(&self) -> u64 {
        self.n_bytes
    }
}

/// Checks dims and computes (element count, byte count).
pub(crate) fn tensor_size(name: &str, dims: &[u64], ty: GgmlType) -> Result<(u64, u64)> {
    let bad = |reason: String| GgufError::BadDims {
        tensor: name.into(),
        dims: dims.to_vec(),
        reason,
    };
    if dims.len() > MAX_DIMS {
        return Err(bad(format!(
            "{} dims, at most {MAX_DIMS} allowed",
            dims.len()
        )));
    }
    let mut n: u64 = 1;
    for &d in dims {
        if d > i64::MAX as u64 {
            return Err(bad(format!("dim {d} exceeds i64::MAX")));
        }
        n = n
            .checked_mul(d)
            .filter(|&n| n <= i64::MAX as u64)
            .ok_or_else(|| bad("element count overflows i64".into()))?;
    }
    let bs = ty.block_size() as u64;
    let ne0 = dims.first().copied().unwrap_or(1);
    if ne0 % bs != 0 {
        return Err(bad(format!(
            "ne[0] = {ne0} is not a multiple of the {ty} block size {bs}"
        )));
    }
    let bytes = (n / bs)
        .checked_mul(ty.type_size() as u64)
        .ok_or_else(|| bad("byte size overflows u64".into()))?;
    Ok((n, bytes))
}

/// The parsed header, metadata and tensor table of a GGUF file (no tensor data).
#[derive(Debug, Clone)]
pub struct GgufContent {
    version: u32,
    alignment: u64,
    data_offset: u64,
    file_len: u64,
    metadata: Metadata,
    tensors: Vec<TensorInfo>,
    index: HashMap<String, usize>,
}

impl GgufContent {
    /// Parses `bytes` (a whole GGUF file): header, every metadata value,
    /// every tensor info; then checks alignment and that every tensor's bytes
    /// lie inside the file without overlapping another's.
    pub fn parse(bytes: &[u8]) -> Result<GgufContent> {
        let mut c = Cursor::new(bytes);
        let file_len = bytes.len() as u64;
        if bytes.len() < 4 || bytes[..4] != GGUF_MAGIC {
            return Err(GgufError::BadMagic {
                found: bytes[..bytes.len().min(4)].to_vec(),
            });
        }
        c.pos = 4;
        let version = c.u32(&|| "version".into())?;
        if !(1..=3).contains(&version) {
            let swapped = version.swap_bytes();
            if version & 0xFFFF == 0 && (1..=3).contains(&swapped) {
                return Err(GgufError::BigEndian { version: swapped });
            }
            return Err(GgufError::UnsupportedVersion { version });
        }
        c.v1 = version == 1;
        let n_tensors_at = c.pos();
        let n_tensors = c.count(&|| "tensor count".into())?;
        let n_kv_at = c.pos();
        let n_kv = c.count(&|| "metadata key/value count".into())?;
        // A key/value is at least a key length, a type and one byte; a tensor
        // info a name length, n_dims, a type and an offset.
        let min_kv = c.len_width() + 4 + 1;
        let min_ti = c.len_width() + 4 + 4 + 8;
        c.check_fits(n_kv, min_kv, n_kv_at, &|| "metadata key/value count".into())?;
        c.check_fits(n_tensors, min_ti, n_tensors_at, &|| "tensor count".into())?;
        let kv_bytes = u128::from(n_kv) * u128::from(min_kv);
        if kv_bytes + u128::from(n_tensors) * u128::from(min_ti) > u128::from(c.remaining()) {
            return Err(GgufError::CountTooLarge {
                what: "tensor count (after the metadata)".into(),
                offset: n_tensors_at,
                count: n_tensors,
                min_bytes: kv_bytes + u128::from(n_tensors) * u128::from(min_ti),
                available: c.remaining(),
            });
        }

        let mut metadata = Metadata::new();
        for i in 0..n_kv {
            let kv_at = c.pos();
            let key = c.string(&|| format!("key of metadata entry #{i}"))?;
            let ty = c.value_type(&key, &|| format!("value type of key '{key}'"))?;
            let value = c.value(ty, &key, 0)?;
            if metadata.contains_key(&key) {
                return Err(GgufError::DuplicateKey {
                    key,
                    offset: Some(kv_at),
                });
            }
            metadata.set(key, value);
        }

        let reserve = (n_tensors as usize).min(1 << 16);
        let mut tensors = Vec::with_capacity(reserve);
        let mut index = HashMap::with_capacity(reserve);
        for i in 0..n_tensors {
            let info_at = c.pos();
            let name = c.string(&|| format!("name of tensor #{i}"))?;
            let nd_at = c.pos();
            let n_dims = c.u32(&|| format!("n_dims of tensor '{name}'"))?;
            if n_dims as usize > MAX_DIMS {
                return Err(GgufError::BadDims {
                    tensor: name,
                    dims: Vec::new(),
                    reason: format!("n_dims {n_dims} at offset {nd_at} exceeds {MAX_DIMS}"),
                });
            }
            let mut dims = Vec::with_capacity(n_dims as usize);
            for d in 0..n_dims {
                dims.push(c.count(&|| format!("dim {d} of tensor '{name}'"))?);
            }
            let ty_at = c.pos();
            let id = c.u32(&|| format!("type of tensor '{name}'"))?;
            let Some(ggml_type) = GgmlType::from_id(id) else {
                return Err(GgufError::UnknownTensorType {
                    id,
                    tensor: name,
                    offset: ty_at,
                    removed: GgmlType::removed_name(id),
                });
            };
            let offset = c.u64(&|| format!("data offset of tensor '{name}'"))?;
            let (n_elements, n_bytes) = tensor_size(&name, &dims, ggml_type)?;
            if index.contains_key(&name) {
                return Err(GgufError::DuplicateTensor {
                    name,
                    offset: Some(info_at),
                });
            }
            index.insert(name.clone(), tensors.len());
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
                abs_offset: 0,
                n_elements,
                n_bytes,
            });
        }

        let alignment = match metadata.get(KEY_ALIGNMENT) {
            None => DEFAULT_ALIGNMENT,
            Some(Value::U32(a)) if a.is_power_of_two() => u64::from(*a),
            Some(Value::U32(a)) => {
                return Err(GgufError::BadAlignment {
                    reason: format!("{a} is not a non-zero power of two"),
                })
            }
            Some(v) => {
                return Err(GgufError::BadAlignment {
                    reason: format!("stored as {}, must be UINT32", v.value_type()),
                })
            }
        };
        let data_offset = c.pos().div_ceil(alignment) * alignment;
        for t in &mut tensors {
            if t.offset % alignment != 0 {
                return Err(GgufError::MisalignedTensor {
                    tensor: t.name.clone(),
                    offset: t.offset,
                    alignment,
                });
            }
            let start = u128::from(data_offset) + u128::from(t.offset);
            let end = start + u128::from(t.n_bytes);
            if end > u128::from(file_len) {
                return Err(GgufError::TensorOutOfFile {
                    tensor: t.name.clone(),
                    start,
                    end,
                    file_len,
                });
            }
            t.abs_offset = start as u64;
        }
        let mut order: Vec<&TensorInfo> = tensors.iter().filter(|t| t.n_bytes > 0).collect();
        order.sort_by_key(|t| t.offset);
        for w in order.windows(2) {
            if w[0].offset + w[0].n_bytes > w[1].offset {
                return Err(GgufError::OverlappingTensors {
                    first: w[0].name.clone(),
                    first_start: w[0].offset,
                    first_end: w[0].offset + w[0].n_bytes,
                    second: w[1].name.clone(),
                    second_start: w[1].offset,
                });
            }
        }
        Ok(GgufContent {
            version,
            alignment,
            data_offset,
            file_len,
            metadata,
            tensors,
            index,
        })
    }

    /// The file's GGUF version (1, 2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The data alignment (`general.alignment`, default 32).
    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Where the data section starts in the file.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    /// Length of the parsed file.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The metadata table.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Tensor infos in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The info of the tensor named `name`.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.index.get(name).map(|&i| &self.tensors[i])
    }
}
