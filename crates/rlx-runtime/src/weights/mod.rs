//! Loading weights: the [`WeightLoader`] trait and [`BytesWeightLoader`],
//! a safetensors reader over a memory map or an owned buffer.
//!
//! The header is parsed and validated once (with the `safetensors` crate,
//! plus our own pass that names the offending tensor and offsets when the
//! crate refuses a file); tensors are then zero-copy byte views
//! ([`BytesWeightLoader::view`]) until [`WeightLoader::get`] copies one
//! into a [`HostTensor`]. [`crate::CompiledGraph::set_params_from`] sets every
//! param of a compiled graph from a loader, converting float dtypes.
//! A header that names a tensor (or `__metadata__`, or a metadata key)
//! twice is refused: readers disagree on which one counts.
//!
//! Every dtype safetensors defines loads (including `U16`, `U64` and the
//! 8-bit floats, which are RLX storage dtypes: see [`rlx_ir::f8`] and
//! [`convert_dtype`]) except the packed sub-byte floats `F4`, `F6_E2M3`
//! and `F6_E3M2`, whose element order within a byte no reference defines:
//! reading one is a [`WeightError::UnsupportedDType`] naming it.
//! [`serialize_safetensors`] / [`save_safetensors`] write any dtype back,
//! in the layout the Python package writes.
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

mod convert;
mod dtype;
mod header;
mod params;
mod save;

pub use convert::convert_dtype;
pub use save::{save_safetensors, serialize_safetensors};

use crate::Result;
use dtype::{rlx_dtype, sub_byte_reason};
use header::{diagnose, duplicate_key, header_len, Duplicate};
use memmap2::Mmap;
use rlx_ir::{DType, ErrorSource, HostTensor};
use safetensors::tensor::{Metadata, SafeTensorError};
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
    /// A tensor of a dtype RLX cannot read.
    #[error(
        "{source_name}: tensor \"{name}\" has dtype {dtype}, which RLX does not load: {reason}"
    )]
    UnsupportedDType {
        /// The file.
        source_name: String,
        /// The tensor.
        name: String,
        /// The safetensors dtype.
        dtype: String,
        /// Why.
        reason: String,
    },
    /// Tensors that cannot be written as a safetensors file.
    #[error("{target}: cannot write safetensors: {reason}")]
    Write {
        /// The file (or `<bytes>`).
        target: String,
        /// What is wrong, naming the tensor.
        reason: String,
    },
    /// A conversion that would change the kind of the data.
    #[error("tensor \"{name}\": cannot convert {from} to {to} (only to a float or 8-bit float dtype, from any real dtype)")]
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
        if let Some(dup) = duplicate_key(&buf[8..8 + n]) {
            let reason = match dup {
                Duplicate::Key(k) if k == "__metadata__" => {
                    "\"__metadata__\" appears twice in the header".to_string()
                }
                Duplicate::Key(k) => format!(
                    "tensor \"{k}\" is named twice in the header (readers disagree on which one counts)"
                ),
                Duplicate::MetadataKey(k) => {
                    format!("metadata key \"{k}\" appears twice in \"__metadata__\"")
                }
            };
            return Err(malformed(reason, None));
        }
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
            dtype: info.dtype.to_string(),
            reason: sub_byte_reason(info.dtype),
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
