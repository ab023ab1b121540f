//! [`GgufWriter`]: builds GGUF files (v1, v2 or v3) with the byte layout
//! gguf-py's `GGUFWriter` produces, optionally split into shards.

use crate::codecs;
use crate::error::{GgufError, Result};
use crate::parse::{tensor_size, DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_VERSION, KEY_ALIGNMENT};
use crate::split::{shard_path, KEY_SPLIT_COUNT, KEY_SPLIT_NO, KEY_SPLIT_TENSORS_COUNT};
use crate::types::GgmlType;
use crate::value::{Metadata, Value};
use rlx_ir::HostTensor;
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
struct PendingTensor {
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    data: Vec<u8>,
}

/// Collects metadata and tensors, then writes a GGUF file.
///
/// Keys and tensors are written in insertion order; the layout (header,
/// key/values, tensor infos, zero padding to the alignment, each tensor's
/// data padded to the alignment) is gguf-py's, so the same content gives
/// the same bytes.
///
/// ```
/// use rlx_gguf::{GgufReader, GgufWriter, GgmlType};
/// let mut w = GgufWriter::new();
/// w.add_metadata("general.name", "tiny").unwrap();
/// let values: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin()).collect();
/// w.add_quantized("blk.0.w", &[1, 256], &values, GgmlType::Q4_K).unwrap();
/// let bytes = w.to_bytes().unwrap();
/// let r = GgufReader::new(bytes).unwrap();
/// let back = r.dequantize_f32("blk.0.w").unwrap();
/// // 4-bit levels over each 32-value block's range [-1, 1]: ~1/15 per value.
/// assert!(back.iter().zip(&values).all(|(a, b)| (a - b).abs() < 0.1));
/// ```
#[derive(Debug, Clone)]
pub struct GgufWriter {
    version: u32,
    alignment: u64,
    metadata: Metadata,
    tensors: Vec<PendingTensor>,
    names: HashSet<String>,
}

impl Default for GgufWriter {
    fn default() -> Self {
        GgufWriter::new()
    }
}

fn pad_to(n: u64, align: u64) -> u64 {
    n.div_ceil(align) * align
}

impl GgufWriter {
    /// An empty GGUF v3 file with the default alignment (32).
    pub fn new() -> GgufWriter {
        GgufWriter {
            version: GGUF_VERSION,
            alignment: DEFAULT_ALIGNMENT,
            metadata: Metadata::new(),
            tensors: Vec::new(),
            names: HashSet::new(),
        }
    }

    /// Sets the GGUF version to write (1, 2 or 3; v1 stores counts and
    /// lengths as `u32`).
    pub fn set_version(&mut self, version: u32) -> Result<&mut Self> {
        if !(1..=3).contains(&version) {
            return Err(GgufError::Invalid(format!(
                "version {version}: only 1, 2 and 3 exist"
            )));
        }
        self.version = version;
        Ok(self)
    }

    /// Sets the data alignment and records it as `general.alignment` (`u32`).
    pub fn set_alignment(&mut self, alignment: u32) -> Result<&mut Self> {
        if !alignment.is_power_of_two() {
            return Err(GgufError::BadAlignment {
                reason: format!("{alignment} is not a non-zero power of two"),
            });
        }
        self.alignment = u64::from(alignment);
        self.metadata.set(KEY_ALIGNMENT, Value::U32(alignment));
        Ok(self)
    }

    /// Adds a metadata key (a duplicate is an error). `general.alignment`
    /// must be a power-of-two `u32` and also sets the alignment.
    pub fn add_metadata(&mut self, key: &str, value: impl Into<Value>) -> Result<&mut Self> {
        let value = value.into();
        if key == KEY_ALIGNMENT {
            match value {
                Value::U32(a) if a.is_power_of_two() => self.alignment = u64::from(a),
                ref v => {
                    return Err(GgufError::BadAlignment {
                        reason: format!("{v:?} must be a non-zero power-of-two UINT32"),
                    })
                }
            }
        }
        self.metadata.insert(key, value)?;
        Ok(self)
    }

    /// The metadata added so far.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Adds a tensor from its stored bytes. `dims` are in GGUF (`ne`) order,
    /// innermost first; the byte length must match the type and dims.
    pub fn add_tensor_bytes(
        &mut self,
        name: &str,
        dims: &[u64],
        ty: GgmlType,
        data: Vec<u8>,
    ) -> Result<&mut Self> {
        if self.names.contains(name) {
            return Err(GgufError::DuplicateTensor {
                name: name.into(),
                offset: None,
            });
        }
        let (_, n_bytes) = tensor_size(name, dims, ty)?;
        if n_bytes != data.len() as u64 {
            return Err(GgufError::DataLength {
                what: format!("tensor '{name}' ({ty}, ne {dims:?})"),
                expected: n_bytes as usize,
                given: data.len(),
            });
        }
        self.names.insert(name.into());
        self.tensors.push(PendingTensor {
            name: name.into(),
            dims: dims.to_vec(),
            ty,
            data,
        });
        Ok(self)
    }

    /// Adds a [`HostTensor`] of a dtype GGUF stores as is (F32, F16, BF16,
    /// F64, I8, I16, I32, I64), keeping its row-major shape.
    pub fn add_host_tensor(&mut self, name: &str, tensor: &HostTensor) -> Result<&mut Self> {
        let Some(ty) = GgmlType::from_dtype(tensor.dtype()) else {
            return Err(GgufError::Invalid(format!(
                "tensor '{name}': GGUF has no type for dtype {}",
                tensor.dtype()
            )));
        };
        let dims: Vec<u64> = tensor.dims().iter().rev().map(|&d| d as u64).collect();
        self.add_tensor_bytes(name, &dims, ty, tensor.bytes().to_vec())
    }

    /// Quantizes row-major `values` of `shape` to `ty` and adds the result.
    /// The last (innermost) dim must be a multiple of the type's block size.
    pub fn add_quantized(
        &mut self,
        name: &str,
        shape: &[usize],
        values: &[f32],
        ty: GgmlType,
    ) -> Result<&mut Self> {
        let n: usize = shape.iter().product();
        if n != values.len() {
            return Err(GgufError::DataLength {
                what: format!("values of tensor '{name}' (shape {shape:?})"),
                expected: n,
                given: values.len(),
            });
        }
        let dims: Vec<u64> = shape.iter().rev().map(|&d| d as u64).collect();
        tensor_size(name, &dims, ty)?;
        let data = codecs::quantize(ty, values)?;
        self.add_tensor_bytes(name, &dims, ty, data)
    }

    /// Number of tensors added.
    pub fn tensor_count(&self) -> usize {
        self.tensors.len()
    }

    /// Writes the file to `out`; returns the bytes written.
    pub fn write_to<W: Write>(&self, out: W) -> Result<u64> {
        let all: Vec<&PendingTensor> = self.tensors.iter().collect();
        self.write_shard(out, &self.metadata, &all)
    }

    /// The whole file as bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut v = Vec::new();
        self.write_to(&mut v)?;
        Ok(v)
    }

    /// Writes the file to `path`.
    pub fn write_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        std::fs::write(path, bytes).map_err(|source| GgufError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Writes the tensors as shards of at most `max_tensors` tensors each,
    /// named like gguf-py and llama.cpp's `gguf-split`: `model.gguf` becomes
    /// `model-00001-of-0000N.gguf`, ... . The first shard holds all metadata;
    /// every shard gets `split.no` (u16), `split.count` (u16) and
    /// `split.tensors.count` (i32). With one shard or fewer, writes `path`
    /// itself unsplit. Returns the paths written.
    pub fn write_split(&self, path: impl AsRef<Path>, max_tensors: usize) -> Result<Vec<PathBuf>> {
        let path = path.as_ref();
        if max_tensors == 0 {
            return Err(GgufError::Invalid(
                "write_split: max_tensors must be > 0".into(),
            ));
        }
        let chunks: Vec<Vec<&PendingTensor>> = self
            .tensors
            .chunks(max_tensors)
            .map(|c| c.iter().collect())
            .collect();
        if chunks.len() <= 1 {
            self.write_file(path)?;
            return Ok(vec![path.to_path_buf()]);
        }
        let count = u16::try_from(chunks.len())
            .map_err(|_| GgufError::Invalid(format!("{} shards exceed u16", chunks.len())))?;
        let total = i32::try_from(self.tensors.len())
            .map_err(|_| GgufError::Invalid("more than i32::MAX tensors".into()))?;
        let mut written = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            let mut meta = if i == 0 {
                self.metadata.clone()
            } else {
                Metadata::new()
            };
            meta.set(KEY_SPLIT_NO, Value::U16(i as u16));
            meta.set(KEY_SPLIT_COUNT, Value::U16(count));
            meta.set(KEY_SPLIT_TENSORS_COUNT, Value::I32(total));
            let shard = shard_path(path, i + 1, chunks.len());
            let mut bytes = Vec::new();
            self.write_shard(&mut bytes, &meta, chunk)?;
            std::fs::write(&shard, bytes).map_err(|source| GgufError::Io {
                path: shard.clone(),
                source,
            })?;
            written.push(shard);
        }
        Ok(written)
    }

    fn write_shard<W: Write>(
        &self,
        mut out: W,
        metadata: &Metadata,
        tensors: &[&PendingTensor],
    ) -> Result<u64> {
        let v1 = self.version == 1;
        let mut head = Vec::new();
        head.extend_from_slice(&GGUF_MAGIC);
        head.extend_from_slice(&self.version.to_le_bytes());
        put_count(&mut head, tensors.len() as u64, v1, "tensor count")?;
        put_count(&mut head, metadata.len() as u64, v1, "metadata count")?;
        for (key, value) in metadata.iter() {
            put_string(&mut head, key, v1)?;
            head.extend_from_slice(&value.value_type().id().to_le_bytes());
            put_value(&mut head, value, v1)?;
        }
        let mut offset = 0u64;
        for t in tensors {
            put_string(&mut head, &t.name, v1)?;
            head.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for &d in &t.dims {
                put_count(&mut head, d, v1, "tensor dim")?;
            }
            head.extend_from_slice(&t.ty.id().to_le_bytes());
            head.extend_from_slice(&offset.to_le_bytes());
            offset += pad_to(t.data.len() as u64, self.alignment);
        }
        let padded = pad_to(head.len() as u64, self.alignment) as usize;
        head.resize(padded, 0);
        let w = |r: std::io::Result<()>| r.map_err(GgufError::Write);
        w(out.write_all(&head))?;
        let mut total = head.len() as u64;
        let zeros = vec![0u8; self.alignment as usize];
        for t in tensors {
            w(out.write_all(&t.data))?;
            let pad = (pad_to(t.data.len() as u64, self.alignment) - t.data.len() as u64) as usize;
            w(out.write_all(&zeros[..pad]))?;
            total += (t.data.len() + pad) as u64;
        }
        Ok(total)
    }
}

fn put_count(out: &mut Vec<u8>, n: u64, v1: bool, what: &str) -> Result<()> {
    if v1 {
        let n = u32::try_from(n)
            .map_err(|_| GgufError::Invalid(format!("{what} {n} does not fit GGUF v1's u32")))?;
        out.extend_from_slice(&n.to_le_bytes());
    } else {
        out.extend_from_slice(&n.to_le_bytes());
    }
    Ok(())
}

fn put_string(out: &mut Vec<u8>, s: &str, v1: bool) -> Result<()> {
    put_count(out, s.len() as u64, v1, "string length")?;
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_value(out: &mut Vec<u8>, v: &Value, v1: bool) -> Result<()> {
    match v {
        Value::U8(x) => out.push(*x),
        Value::I8(x) => out.push(*x as u8),
        Value::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Bool(x) => out.push(u8::from(*x)),
        Value::String(s) => put_string(out, s, v1)?,
        Value::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Array(a) => {
            out.extend_from_slice(&a.elem_type().id().to_le_bytes());
            put_count(out, a.len() as u64, v1, "array length")?;
            for item in a.values() {
                put_value(out, item, v1)?;
            }
        }
    }
    Ok(())
}
