//! ONNX initializers as a conversion source (feature `onnx`): each
//! initializer of the main graph is read by `rlx-onnx` into a
//! [`rlx_ir::HostTensor`] and converted like a safetensors tensor.

use crate::convert::{Conversion, Elem, SourceMetadata, SourceTensor};
use crate::error::{ConvertError, Result};
use crate::options::Converter;
use crate::report::ConvertReport;
use crate::safetensors_source::map_file;
use prost::Message;
use rlx_onnx::proto::ModelProto;
use std::borrow::Cow;
use std::path::Path;

impl Converter {
    /// Converts the initializers of an ONNX model's bytes, in the model's
    /// order; `base_dir` resolves external data (`None`: external data is an
    /// error). `metadata_props` pass through as `onnx.<key>`.
    ///
    /// ONNX stores weights as the graph uses them (a `MatMul` weight is
    /// `[in, out]`); they are converted in that layout.
    pub fn convert_onnx_bytes(&self, bytes: &[u8], base_dir: Option<&Path>) -> Result<Conversion> {
        self.convert_onnx_named(bytes, base_dir, "<bytes>")
    }

    /// Converts the initializers of the ONNX model `input` (external data
    /// next to it) and writes the GGUF file `output`.
    pub fn convert_onnx_file(
        &self,
        input: impl AsRef<Path>,
        output: impl AsRef<Path>,
    ) -> Result<ConvertReport> {
        let input = input.as_ref();
        let map = map_file(input)?;
        self.convert_onnx_named(&map, input.parent(), &input.display().to_string())?
            .write_file(output)
    }

    fn convert_onnx_named(
        &self,
        bytes: &[u8],
        base_dir: Option<&Path>,
        source_name: &str,
    ) -> Result<Conversion> {
        let bad = |message: String| ConvertError::Onnx {
            source_name: source_name.to_string(),
            message,
        };
        let model = ModelProto::decode(bytes).map_err(|e| bad(format!("ModelProto: {e}")))?;
        let graph = model.graph.unwrap_or_default();
        if let Some(s) = graph.sparse_initializer.first() {
            let name = s.values.as_ref().and_then(|v| v.name.clone());
            return Err(bad(format!(
                "sparse initializer '{}' is not supported; densify it first",
                name.unwrap_or_default()
            )));
        }
        let pairs = model
            .metadata_props
            .iter()
            .map(|p| {
                (
                    p.key.clone().unwrap_or_default(),
                    p.value.clone().unwrap_or_default(),
                )
            })
            .collect();
        let sources = graph.initializer.iter().map(|t| {
            let name = t.name.clone().unwrap_or_default();
            let host = rlx_onnx::tensor_from_proto(t, base_dir)
                .map_err(|e| bad(format!("initializer '{name}': {e}")))?;
            Ok(SourceTensor {
                name,
                elem: Elem::from_dtype(host.dtype()),
                dims: host.dims().to_vec(),
                bytes: Cow::Owned(host.into_bytes()),
            })
        });
        let meta = SourceMetadata {
            prefix: "onnx.",
            pairs,
        };
        self.convert_sources(sources, Some(meta))
    }
}
