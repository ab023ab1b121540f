//! safetensors as a conversion source (via the `safetensors` crate over a
//! memory map).

use crate::convert::{Conversion, Elem, SourceMetadata, SourceTensor};
use crate::error::{ConvertError, Result};
use crate::options::Converter;
use crate::report::ConvertReport;
use rlx_ir::DType;
use safetensors::{Dtype, SafeTensors};
use std::borrow::Cow;
use std::path::Path;

fn elem_of(d: Dtype) -> Elem {
    match d {
        Dtype::F32 => Elem::Float(DType::F32),
        Dtype::F16 => Elem::Float(DType::F16),
        Dtype::BF16 => Elem::Float(DType::BF16),
        Dtype::F64 => Elem::Float(DType::F64),
        Dtype::I8 => Elem::Int(DType::I8),
        Dtype::I16 => Elem::Int(DType::I16),
        Dtype::I32 => Elem::Int(DType::I32),
        Dtype::I64 => Elem::Int(DType::I64),
        other => Elem::Other(format!("{other:?}")),
    }
}

/// Maps a file for reading.
pub(crate) fn map_file(path: &Path) -> Result<memmap2::Mmap> {
    let io = |source| ConvertError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    // SAFETY: the map is read-only and lives only for this conversion; a
    // file changed underneath it by another process is outside our contract
    // (as for every memory-mapped reader).
    unsafe { memmap2::Mmap::map(&file) }.map_err(io)
}

impl Converter {
    /// Converts a `.safetensors` file's bytes, tensors in file order; the
    /// `__metadata__` strings pass through as `safetensors.<key>`.
    pub fn convert_safetensors_bytes(&self, bytes: &[u8]) -> Result<Conversion> {
        self.convert_safetensors_named(bytes, "<bytes>")
    }

    /// Converts the `.safetensors` file `input` and writes `output`.
    pub fn convert_safetensors_file(
        &self,
        input: impl AsRef<Path>,
        output: impl AsRef<Path>,
    ) -> Result<ConvertReport> {
        let input = input.as_ref();
        let map = map_file(input)?;
        self.convert_safetensors_named(&map, &input.display().to_string())?
            .write_file(output)
    }

    fn convert_safetensors_named(&self, bytes: &[u8], source_name: &str) -> Result<Conversion> {
        let bad = |e: safetensors::SafeTensorError| ConvertError::Safetensors {
            source_name: source_name.to_string(),
            message: e.to_string(),
        };
        let st = SafeTensors::deserialize(bytes).map_err(bad)?;
        let (_, header) = SafeTensors::read_metadata(bytes).map_err(bad)?;
        let mut tensors = st.tensors();
        // The crate hands tensors out in hash order; file order is stable.
        tensors.sort_by(|(na, a), (nb, b)| {
            (a.data().as_ptr() as usize, na).cmp(&(b.data().as_ptr() as usize, nb))
        });
        let pairs = header
            .metadata()
            .as_ref()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let sources = tensors.into_iter().map(|(name, view)| {
            Ok(SourceTensor {
                name,
                elem: elem_of(view.dtype()),
                dims: view.shape().to_vec(),
                bytes: Cow::Borrowed(view.data()),
            })
        });
        let meta = SourceMetadata {
            prefix: "safetensors.",
            pairs,
        };
        self.convert_sources(sources, Some(meta))
    }
}
