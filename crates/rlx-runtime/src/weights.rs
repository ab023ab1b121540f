//! Loading weights: the [`WeightLoader`] trait and [`BytesWeightLoader`],
//! a safetensors reader over a memory map or an owned buffer.
//!
//! The header is parsed and validated once (with the `safetensors` crate,
//! plus our own pass that names the offending tensor and offsets when the
//! crate refuses a file); tensors are then zero-copy byte views
//! ([`BytesWeightLoader::view`]) until [`WeightLoader::get`] copies one
//! into a [`HostTensor`]. [`CompiledGraph::set_params_from`] sets every
//! param of a compiled graph from a loader, converting float dtypes.
//!
//! ```
//! use rlx_runtime::{BytesWeightLoader, WeightLoader};
//! use rlx_ir::DType;
//! // A safetensors file with one F32 tensor "w" of shape [2].
//! let header = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
//! let mut file = (header.len() as u64).to_le_bytes().to_vec();
//! file.extend_from_slice(header);
//! file.extend_from_slice(&1.5f32.to_le_bytes());
//! file.extend_from_slice(&(-2.0f32).to_le_bytes());
//! let loader = BytesWeightLoader::from_bytes(file).unwrap();
//! assert_eq!(loader.names(), vec!["w".to_string()]);
//! let w = loader.get_as("w", DType::F16).unwrap();
//! assert_eq!(w.dtype(), DType::F16);
//! assert_eq!(w.to_f64_lossy(), vec![1.5, -2.0]);
//! ```

use crate::{CompiledGraph, Result, RuntimeError};
use memmap2::Mmap;
use rlx_ir::{bf16, f16, DType, ErrorSource, HostTensor};
use safetensors::tensor::{Dtype as StDtype, Metadata, SafeTensorError};
use safetensors::SafeTensors;
use std::path::Path;
use thiserror::Error;

/// An error while reading weights; every variant names the source and,
/// where there is one, the tensor.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WeightError {
    /// The file could not be opened or mapped.
    #[error("{source_name}: {source}")]
    Io {
        /// The file.
        source_name: String,
        /// The OS error (a [`std::io::Error`]).
        #[source]
        source: ErrorSource,
    },
    /// The header (or the tensor table in it) is malformed.
    #[error("{source_name}: malformed safetensors file: {reason}")]
    Malformed {
        /// The file (or `<bytes>`).
        source_name: String,
        /// What is wrong, with the offsets and tensor involved.
        reason: String,
        /// The `safetensors` crate's error when it refused the file (a
        /// [`SafeTensorError`]); `None` when our own checks did.
        #[source]
        source: Option<ErrorSource>,
    },
    /// No tensor of that name.
    #[error("{source_name}: no tensor \"{name}\" ({count} tensors in the file)")]
    NotFound {
        /// The file.
        source_name: String,
        /// The name asked for.
        name: String,
        /// How many tensors the file has.
        count: usize,
    },
    /// A tensor of a dtype RLX has no type for.
    #[error("{source_name}: tensor \"{name}\" has dtype {dtype}, which RLX does not load")]
    UnsupportedDType {
        /// The file.
        source_name: String,
        /// The tensor.
        name: String,
        /// The safetensors dtype.
        dtype: String,
    },
    /// A conversion that would change the kind of the data.
    #[error("tensor \"{name}\": cannot convert {from} to {to} (float <-> float and integer / bool -> float are supported)")]
    Convert {
        /// The tensor.
        name: String,
        /// Its dtype.
        from: DType,
        /// The dtype asked for.
        to: DType,
    },
    /// A graph param the loader cannot fill.
    #[error("param \"{name}\": {reason}")]
    Param {
        /// The param.
        name: String,
        /// Why.
        reason: String,
    },
    /// A graph param whose tensor the loader could not read.
    #[error("param \"{name}\": {source}")]
    ParamTensor {
        /// The param.
        name: String,
        /// The loader's error, naming the file and tensor.
        #[source]
        source: rlx_ir::SourceBox<WeightError>,
    },
}

/// Name, dtype and dims of one stored tensor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMeta {
    /// The tensor's name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its dims (row-major).
    pub dims: Vec<usize>,
}

/// A source of named weights.
pub trait WeightLoader {
    /// Every tensor name, sorted.
    fn names(&self) -> Vec<String>;

    /// Dtype and dims of `name` without reading its data.
    fn meta(&self, name: &str) -> std::result::Result<TensorMeta, WeightError>;

    /// A copy of the tensor `name` in its stored dtype.
    fn get(&self, name: &str) -> std::result::Result<HostTensor, WeightError>;

    /// The tensor `name` converted to `dtype` (see [`convert_dtype`]).
    fn get_as(&self, name: &str, dtype: DType) -> std::result::Result<HostTensor, WeightError> {
        convert_dtype(name, self.get(name)?, dtype)
    }

    /// Hands the stored bytes of `name` (its dtype, little-endian) to
    /// `sink` in order, a piece at a time, each with its byte offset: a
    /// large tensor can then be copied into place without a whole host
    /// copy. By default one piece, read with [`Self::get`].
    fn read_pieces(&self, name: &str, sink: PieceSink<'_>) -> Result<()> {
        let t = self.get(name)?;
        sink(0, t.bytes())
    }
}

/// Receives the byte pieces of a tensor ([`WeightLoader::read_pieces`]):
/// `(offset, bytes)`.
pub type PieceSink<'a> = &'a mut dyn FnMut(usize, &[u8]) -> Result<()>;

/// Bytes per piece [`BytesWeightLoader::read_pieces`] hands out.
const PIECE_BYTES: usize = 1 << 20;

/// Converts `t` (the tensor `name`) to `dtype`: the identity, float to
/// float (f32 / f64 / f16 / bf16, rounding to nearest even), or integer /
/// bool to float. Anything else is a [`WeightError::Convert`].
pub fn convert_dtype(
    name: &str,
    t: HostTensor,
    dtype: DType,
) -> std::result::Result<HostTensor, WeightError> {
    let from = t.dtype();
    if from == dtype {
        return Ok(t);
    }
    let float = |d: DType| matches!(d, DType::F32 | DType::F64 | DType::F16 | DType::BF16);
    if !float(dtype) || from == DType::C64 {
        return Err(WeightError::Convert {
            name: name.to_string(),
            from,
            to: dtype,
        });
    }
    let dims = t.dims().to_vec();
    let v = t.to_f64_lossy();
    let out = match dtype {
        DType::F64 => HostTensor::from_vec(v, &dims),
        DType::F32 => HostTensor::from_vec(v.into_iter().map(|x| x as f32).collect(), &dims),
        // Through f32: exact for f16 / bf16 sources, and f64 -> f32 -> f16 is
        // how torch and numpy narrow too.
        DType::F16 => HostTensor::from_vec(
            v.into_iter().map(|x| f16::from_f32(x as f32)).collect(),
            &dims,
        ),
        _ => HostTensor::from_vec(
            v.into_iter().map(|x| bf16::from_f32(x as f32)).collect(),
            &dims,
        ),
    };
    Ok(out.expect("same element count"))
}

enum Backing {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Backing {
    fn bytes(&self) -> &[u8] {
        match self {
            Backing::Mapped(m) => m,
            Backing::Owned(v) => v,
        }
    }

    /// Drops the whole pages of `range` from this process's resident set
    /// once they were copied out (the page cache keeps the file; a later
    /// read faults them back in), so loading a model does not hold the
    /// file's pages and the params' copy at once.
    fn release(&self, range: std::ops::Range<usize>) {
        #[cfg(unix)]
        if let Backing::Mapped(m) = self {
            const PAGE: usize = 4096;
            let (start, end) = (range.start.next_multiple_of(PAGE), range.end / PAGE * PAGE);
            if start < end {
                // SAFETY: the map is a read-only file mapping: dropping its
                // pages loses nothing, and reads (through any live slice) fault
                // the same file bytes back in. A refusal (e.g. larger pages)
                // only leaves the pages resident.
                let _ = unsafe {
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
                };
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }
}

/// A safetensors file held as bytes: memory-mapped ([`Self::open`]) or
/// owned ([`Self::from_bytes`]). Tensors are views into those bytes.
pub struct BytesWeightLoader {
    source_name: String,
    backing: Backing,
    metadata: Metadata,
    /// Where the data section starts (8 + header length).
    data_start: usize,
}

impl std::fmt::Debug for BytesWeightLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BytesWeightLoader")
            .field("source", &self.source_name)
            .field("tensors", &self.metadata.tensors().len())
            .finish()
    }
}

/// Our dtype of a safetensors dtype, if RLX has one.
fn rlx_dtype(d: StDtype) -> Option<DType> {
    Some(match d {
        StDtype::BOOL => DType::Bool,
        StDtype::U8 => DType::U8,
        StDtype::I8 => DType::I8,
        StDtype::I16 => DType::I16,
        StDtype::F16 => DType::F16,
        StDtype::BF16 => DType::BF16,
        StDtype::I32 => DType::I32,
        StDtype::U32 => DType::U32,
        StDtype::F32 => DType::F32,
        StDtype::C64 => DType::C64,
        StDtype::F64 => DType::F64,
        StDtype::I64 => DType::I64,
        _ => return None,
    })
}

impl BytesWeightLoader {
    /// Memory-maps and validates the safetensors file at `path`.
    ///
    /// The map is read-only; as with every memory map, the file must not be
    /// truncated or rewritten while the loader lives.
    pub fn open(path: impl AsRef<Path>) -> std::result::Result<Self, WeightError> {
        let path = path.as_ref();
        let source_name = path.display().to_string();
        let io = |e: std::io::Error| WeightError::Io {
            source_name: source_name.clone(),
            source: ErrorSource::new(e),
        };
        let file = std::fs::File::open(path).map_err(io)?;
        // SAFETY: a read-only private map; we never hand out a view that
        // outlives `self`, and the header is validated against its length.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        // Small pages only: a kernel that maps the page cache's large
        // folios whole (2 MiB at a fault) would keep the parts of each
        // folio outside a released range resident (8 MiB of MiniLM's file
        // stayed mapped after loading on Linux 6.18). A refusal only costs
        // that residue.
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::NoHugePage);
        Self::new(source_name.clone(), Backing::Mapped(map))
    }

    /// Validates a safetensors file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> std::result::Result<Self, WeightError> {
        Self::new("<bytes>".to_string(), Backing::Owned(bytes))
    }

    fn new(source_name: String, backing: Backing) -> std::result::Result<Self, WeightError> {
        let buf = backing.bytes();
        let malformed = |reason: String, source: Option<SafeTensorError>| WeightError::Malformed {
            source_name: source_name.clone(),
            reason,
            source: source.map(ErrorSource::new),
        };
        let n = header_len(buf).map_err(|reason| malformed(reason, None))?;
        let (_, metadata) = SafeTensors::read_metadata(buf)
            .map_err(|e| malformed(diagnose(buf, n, &e), Some(e)))?;
        Ok(BytesWeightLoader {
            source_name,
            backing,
            metadata,
            data_start: 8 + n,
        })
    }

    /// Dtype, dims and bytes of `name`, borrowed from the file (no copy).
    pub fn view(&self, name: &str) -> std::result::Result<(TensorMeta, &[u8]), WeightError> {
        let info = self
            .metadata
            .info(name)
            .ok_or_else(|| WeightError::NotFound {
                source_name: self.source_name.clone(),
                name: name.to_string(),
                count: self.metadata.tensors().len(),
            })?;
        let dtype = rlx_dtype(info.dtype).ok_or_else(|| WeightError::UnsupportedDType {
            source_name: self.source_name.clone(),
            name: name.to_string(),
            dtype: format!("{:?}", info.dtype),
        })?;
        let (s, e) = info.data_offsets;
        // Validated at open: offsets are contiguous, in range and sized.
        let bytes = &self.backing.bytes()[self.data_start + s..self.data_start + e];
        let meta = TensorMeta {
            name: name.to_string(),
            dtype,
            dims: info.shape.clone(),
        };
        Ok((meta, bytes))
    }

    /// The file (or `<bytes>`) the loader reads.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// The free-form `__metadata__` strings of the header, if any.
    pub fn file_metadata(&self) -> Option<&std::collections::HashMap<String, String>> {
        self.metadata.metadata().as_ref()
    }
}

impl WeightLoader for BytesWeightLoader {
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.metadata.tensors().into_keys().collect();
        names.sort();
        names
    }

    fn meta(&self, name: &str) -> std::result::Result<TensorMeta, WeightError> {
        self.view(name).map(|(m, _)| m)
    }

    fn get(&self, name: &str) -> std::result::Result<HostTensor, WeightError> {
        let (meta, bytes) = self.view(name)?;
        let t = HostTensor::from_bytes(meta.dtype, &meta.dims, bytes.to_vec())
            .expect("sizes validated at open");
        let start = bytes.as_ptr() as usize - self.backing.bytes().as_ptr() as usize;
        self.backing.release(start..start + bytes.len());
        Ok(t)
    }

    /// Pieces of 1 MiB (`PIECE_BYTES`) straight from the file, each page dropped
    /// from the resident set once handed out.
    fn read_pieces(&self, name: &str, sink: PieceSink<'_>) -> Result<()> {
        let (_, bytes) = self.view(name)?;
        let base = bytes.as_ptr() as usize - self.backing.bytes().as_ptr() as usize;
        for (k, piece) in bytes.chunks(PIECE_BYTES).enumerate() {
            let offset = k * PIECE_BYTES;
            sink(offset, piece)?;
            self.backing
                .release(base + offset..base + offset + piece.len());
        }
        Ok(())
    }
}

/// The header length of `buf`, checked against the file length.
fn header_len(buf: &[u8]) -> std::result::Result<usize, String> {
    let Some(len_bytes) = buf.get(..8) else {
        return Err(format!(
            "the file is {} bytes, shorter than the 8-byte header length",
            buf.len()
        ));
    };
    let n = u64::from_le_bytes(len_bytes.try_into().expect("8 bytes"));
    let left = buf.len() as u64 - 8;
    if n > left {
        return Err(format!(
            "header length {n} (bytes 0..8) runs past the end of the file: {left} bytes follow"
        ));
    }
    Ok(n as usize)
}

/// Explains why the safetensors crate refused a file whose header length
/// is in range: the first tensor whose dtype, size or offsets are wrong.
fn diagnose(buf: &[u8], n: usize, err: &SafeTensorError) -> String {
    let crate_msg = format!("{err}");
    let Ok(header) = serde_json::from_slice::<serde_json::Value>(&buf[8..8 + n]) else {
        return format!("header (bytes 8..{}): {crate_msg}", 8 + n);
    };
    let Some(table) = header.as_object() else {
        return format!(
            "header (bytes 8..{}) is not a JSON object: {crate_msg}",
            8 + n
        );
    };
    let data_len = buf.len() - 8 - n;
    let mut rows: Vec<(&str, &serde_json::Value)> = table
        .iter()
        .filter(|(k, _)| k.as_str() != "__metadata__")
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let begin = |v: &serde_json::Value| v["data_offsets"][0].as_u64().unwrap_or(u64::MAX);
    rows.sort_by_key(|(_, v)| begin(v));
    let mut expected_begin = 0u64;
    for (name, v) in rows {
        let dtype = v["dtype"].as_str().unwrap_or("?");
        let Ok(st) = serde_json::from_value::<StDtype>(v["dtype"].clone()) else {
            return format!("tensor \"{name}\": unknown dtype {}", v["dtype"]);
        };
        let offs: Vec<u64> = v["data_offsets"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_u64()).collect())
            .unwrap_or_default();
        let shape: Option<Vec<u64>> = v["shape"]
            .as_array()
            .map(|a| a.iter().map(|x| x.as_u64()).collect::<Option<Vec<u64>>>())
            .unwrap_or(None);
        let (Some(shape), [b, e]) = (shape, offs.as_slice()) else {
            return format!(
                "tensor \"{name}\": needs a shape of integers and two data_offsets: {crate_msg}"
            );
        };
        let (b, e) = (*b, *e);
        let bytes = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .and_then(|c| c.checked_mul(st.bitsize() as u64))
            .map(|bits| bits.div_ceil(8));
        if e > data_len as u64 || b > e {
            return format!(
                "tensor \"{name}\": data_offsets [{b}, {e}] are out of range of the {data_len}-byte data section (file offset {})",
                8 + n
            );
        }
        if b != expected_begin {
            let what = if b < expected_begin {
                "overlaps the previous tensor"
            } else {
                "leaves a gap after the previous tensor"
            };
            return format!(
                "tensor \"{name}\": data_offsets [{b}, {e}] {what} (which ends at {expected_begin})"
            );
        }
        if bytes != Some(e - b) {
            return format!(
                "tensor \"{name}\": {dtype} {shape:?} needs {} bytes, data_offsets [{b}, {e}] hold {}",
                bytes.map_or("more than u64".to_string(), |v| v.to_string()),
                e - b
            );
        }
        expected_begin = e;
    }
    if expected_begin != data_len as u64 {
        return format!(
            "the tensors cover {expected_begin} of the {data_len} data bytes (the last offset must be the end of the file)"
        );
    }
    crate_msg
}

impl CompiledGraph {
    /// Sets param `name` from `loader`'s tensor `tensor`. When it is stored
    /// in exactly the param's dtype, it is copied in place piece by piece
    /// ([`WeightLoader::read_pieces`]), so no whole host copy is made
    /// (loading peaks near the params, not params + the largest tensor);
    /// other float dtypes are converted through a host copy. Dims are
    /// checked first: on such an error the param is unchanged; a loader
    /// that fails while handing out pieces leaves it unset (a run asks for
    /// it), never half-old, half-new.
    pub fn set_param_from(
        &mut self,
        name: &str,
        loader: &dyn WeightLoader,
        tensor: &str,
    ) -> Result<()> {
        let i = self.param_index(name)?;
        let shape = self.param_shapes()[i].1.clone();
        let meta = loader.meta(tensor)?;
        let dims = shape.static_dims().expect("compiled shapes are static");
        if meta.dims != dims {
            return Err(WeightError::Param {
                name: name.to_string(),
                reason: format!(
                    "the graph expects {shape}, tensor \"{tensor}\" has dims {:?}",
                    meta.dims
                ),
            }
            .into());
        }
        if meta.dtype != shape.dtype() {
            let t = loader.get_as(tensor, shape.dtype())?;
            return self.set_param_typed(name, &t);
        }
        self.fill_param(i, |write| loader.read_pieces(tensor, write))
    }

    /// Sets every param of the graph from `loader`: each param reads the
    /// tensor of the same name, converted to the param's dtype
    /// ([`convert_dtype`]), with exactly the param's dims. Every tensor is
    /// read and checked before any param changes, so on error no param is
    /// set.
    pub fn set_params_from(&mut self, loader: &dyn WeightLoader) -> Result<()> {
        let mut staged = Vec::new();
        for (name, shape) in self.param_shapes() {
            let err = |reason: String| {
                RuntimeError::from(WeightError::Param {
                    name: name.clone(),
                    reason,
                })
            };
            let t = loader.get_as(&name, shape.dtype()).map_err(|e| {
                RuntimeError::from(WeightError::ParamTensor {
                    name: name.clone(),
                    source: rlx_ir::SourceBox::new(e),
                })
            })?;
            if shape.static_dims().as_deref() != Some(t.dims()) {
                return Err(err(format!(
                    "the graph expects {shape}, the loader holds dims {:?}",
                    t.dims()
                )));
            }
            staged.push((name, t));
        }
        for (name, t) in staged {
            self.set_param_typed(&name, &t)?;
        }
        Ok(())
    }
}
