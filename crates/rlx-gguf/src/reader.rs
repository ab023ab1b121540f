//! [`GgufReader`]: a parsed GGUF file over its bytes (a memory map, a
//! `Vec<u8>` or a borrowed slice), with typed access to tensor data.

use crate::codecs;
use crate::error::{GgufError, Result};
use crate::parse::{GgufContent, TensorInfo};
use crate::types::GgmlType;
use crate::value::Metadata;
use memmap2::Mmap;
use rlx_ir::{DType, HostTensor};
use std::fs::File;
use std::path::Path;

/// A GGUF file: its parsed [`GgufContent`] plus the bytes the tensor data
/// lives in.
///
/// `D` is anything that derefs to the whole file's bytes: [`Mmap`] (from
/// [`GgufReader::open`]), `Vec<u8>` (from [`GgufReader::read`]) or `&[u8]`
/// (tests, fuzzing, embedded data). Construction parses and validates the
/// whole header and tensor table; tensor data is only touched when asked for.
///
/// ```
/// use rlx_gguf::{GgufReader, GgufWriter, GgmlType};
/// use rlx_ir::HostTensor;
/// let mut w = GgufWriter::new();
/// w.add_metadata("general.architecture", "llama").unwrap();
/// w.add_host_tensor("w", &HostTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap()).unwrap();
/// let bytes = w.to_bytes().unwrap();
///
/// let r = GgufReader::new(&bytes[..]).unwrap();
/// assert_eq!(r.metadata().get_str("general.architecture").unwrap(), "llama");
/// let info = r.tensor_info("w").unwrap();
/// assert_eq!((info.ggml_type(), info.shape()), (GgmlType::F32, vec![2, 2]));
/// assert_eq!(r.tensor("w").unwrap().to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);
/// ```
#[derive(Debug)]
pub struct GgufReader<D = Mmap> {
    data: D,
    content: GgufContent,
}

/// A GGUF file opened by memory-mapping it.
pub type GgufFile = GgufReader<Mmap>;

impl GgufReader<Mmap> {
    /// Opens and memory-maps `path`, then parses it.
    ///
    /// The map is read-only. As with any memory map, another process
    /// truncating or rewriting the file while it is mapped is undefined
    /// behaviour; use [`GgufReader::read`] where that can happen.
    pub fn open(path: impl AsRef<Path>) -> Result<GgufReader<Mmap>> {
        let path = path.as_ref();
        let io = |source| GgufError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = File::open(path).map_err(io)?;
        // SAFETY: the map is read-only and never outlives `GgufReader`; the
        // documented caveat (concurrent modification of the file) is the
        // caller's to avoid, as for every memory-mapped reader.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        GgufReader::new(map)
    }
}

impl GgufReader<Vec<u8>> {
    /// Reads `path` into memory, then parses it.
    pub fn read(path: impl AsRef<Path>) -> Result<GgufReader<Vec<u8>>> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| GgufError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        GgufReader::new(bytes)
    }
}

impl<D: AsRef<[u8]>> GgufReader<D> {
    /// Parses the GGUF file held in `data`.
    pub fn new(data: D) -> Result<GgufReader<D>> {
        let content = GgufContent::parse(data.as_ref())?;
        Ok(GgufReader { data, content })
    }

    /// The parsed header, metadata and tensor table.
    pub fn content(&self) -> &GgufContent {
        &self.content
    }

    /// The whole file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.data.as_ref()
    }

    /// Gives back the underlying bytes.
    pub fn into_inner(self) -> D {
        self.data
    }

    /// GGUF version (1, 2 or 3).
    pub fn version(&self) -> u32 {
        self.content.version()
    }

    /// Data alignment.
    pub fn alignment(&self) -> u64 {
        self.content.alignment()
    }

    /// The metadata table.
    pub fn metadata(&self) -> &Metadata {
        self.content.metadata()
    }

    /// Tensor infos in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        self.content.tensors()
    }

    /// The info of one tensor.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.content.tensor_info(name)
    }

    fn info(&self, name: &str) -> Result<&TensorInfo> {
        self.tensor_info(name)
            .ok_or_else(|| GgufError::TensorNotFound { name: name.into() })
    }

    /// The raw bytes of a tensor (quantized blocks as stored).
    pub fn tensor_data(&self, name: &str) -> Result<&[u8]> {
        let info = self.info(name)?;
        Ok(tensor_bytes(self.bytes(), info))
    }

    /// A tensor of a plain type (F32, F16, BF16, F64, I8, I16, I32, I64) as a
    /// [`HostTensor`] of the matching dtype, in row-major shape.
    ///
    /// A quantized tensor is an error that says to use [`Self::dequantize`].
    pub fn tensor(&self, name: &str) -> Result<HostTensor> {
        let info = self.info(name)?;
        host_tensor(info, tensor_bytes(self.bytes(), info))
    }

    /// Any float or quantized tensor decoded to an F32 [`HostTensor`] in
    /// row-major shape (integer tensors are refused: use [`Self::tensor`]).
    pub fn dequantize(&self, name: &str) -> Result<HostTensor> {
        let info = self.info(name)?;
        dequantized_tensor(info, tensor_bytes(self.bytes(), info))
    }

    /// Like [`Self::dequantize`], as a flat `Vec<f32>`.
    pub fn dequantize_f32(&self, name: &str) -> Result<Vec<f32>> {
        let info = self.info(name)?;
        let n = usize::try_from(info.n_elements()).map_err(|_| too_big(info))?;
        codecs::dequantize(info.ggml_type(), tensor_bytes(self.bytes(), info), n)
    }
}

fn too_big(info: &TensorInfo) -> GgufError {
    GgufError::BadDims {
        tensor: info.name().into(),
        dims: info.dims().to_vec(),
        reason: "does not fit in this platform's address space".into(),
    }
}

/// The bytes of `info` in `file` (validated at parse time to lie inside it).
pub(crate) fn tensor_bytes<'a>(file: &'a [u8], info: &TensorInfo) -> &'a [u8] {
    let start = info.file_offset() as usize;
    &file[start..start + info.n_bytes() as usize]
}

pub(crate) fn host_tensor(info: &TensorInfo, bytes: &[u8]) -> Result<HostTensor> {
    let ty = info.ggml_type();
    let Some(dtype) = ty.dtype() else {
        return Err(GgufError::UnsupportedType {
            ty,
            op: "tensor",
            reason: "a quantized tensor has no plain dtype; use dequantize()",
        });
    };
    Ok(HostTensor::from_bytes(
        dtype,
        &info.shape(),
        bytes.to_vec(),
    )?)
}

pub(crate) fn dequantized_tensor(info: &TensorInfo, bytes: &[u8]) -> Result<HostTensor> {
    let ty = info.ggml_type();
    if ty == GgmlType::F32 {
        return Ok(HostTensor::from_bytes(
            DType::F32,
            &info.shape(),
            bytes.to_vec(),
        )?);
    }
    let n = usize::try_from(info.n_elements()).map_err(|_| too_big(info))?;
    let values = codecs::dequantize(ty, bytes, n)?;
    Ok(HostTensor::from_vec(values, &info.shape())?)
}
