//! Decoding a `ModelProto` and describing it: metadata, opsets, signatures.

use crate::proto::{tensor_shape_proto::dimension, type_proto, ModelProto, ValueInfoProto};
use crate::tensor::dtype_of;
use crate::{OnnxError, Result};
use prost::bytes::Bytes;
use prost::Message;
use rlx_ir::{DType, Dim, HugeBuf, HUGE_PAGE};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// Model-level facts of an ONNX file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelInfo {
    /// The ONNX IR version of the file.
    pub ir_version: i64,
    /// Operator sets: domain (`""` is the default `ai.onnx`) -> version.
    pub opsets: BTreeMap<String, i64>,
    /// Producer name.
    pub producer_name: String,
    /// Producer version.
    pub producer_version: String,
    /// Model domain.
    pub domain: String,
    /// Model version.
    pub model_version: i64,
    /// Documentation string.
    pub doc_string: String,
    /// Graph name.
    pub graph_name: String,
    /// `metadata_props` key -> value.
    pub metadata: BTreeMap<String, String>,
}

impl ModelInfo {
    /// The version of the default (`ai.onnx`) operator set.
    pub fn default_opset(&self) -> i64 {
        self.opsets
            .get("")
            .or_else(|| self.opsets.get("ai.onnx"))
            .copied()
            .unwrap_or(1)
    }
}

/// The signature of one graph input or output.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    /// The name.
    pub name: String,
    /// Its RLX dtype (for ONNX types RLX keeps wider, the storage dtype: see
    /// [`crate::narrow`]).
    pub dtype: DType,
    /// The ONNX element type (`TensorProto.DataType`).
    pub elem_type: i32,
    /// Its dims: static sizes or named symbols (`dim_param`); an unnamed
    /// unknown dim (no value, an empty `dim_param`, or a negative
    /// `dim_value` such as exporters' `-1`) gets its own symbol
    /// `<name>:<axis>`.
    pub dims: Vec<Dim>,
}

/// Decodes a model, mapping prost's error to [`OnnxError::Decode`]. Tensor
/// data (`raw_data`) stays a slice of `bytes`, not a copy.
pub(crate) fn decode_model(bytes: Bytes) -> Result<ModelProto> {
    ModelProto::decode(bytes).map_err(|e| OnnxError::Decode {
        what: "ModelProto".into(),
        message: e.to_string(),
    })
}

/// A zeroed buffer of `len` bytes on a huge-page mapping
/// ([`rlx_ir::HugeBuf`]) from one huge page up, else `None` (the caller
/// uses a vector): below it a fresh mapping per load lost to the heap,
/// whose freed pages a later load reuses without a fault (U-Net's import +
/// compile, all weights under 2 MiB, went from 3.0 to 4.7 ms mapped from
/// 64 KiB).
pub(crate) fn large_zeroed(len: usize) -> Option<HugeBuf> {
    (len >= HUGE_PAGE).then(|| HugeBuf::zeroed(len)).flatten()
}

/// Reads a model file's bytes: a large file into a huge-page mapping
/// ([`large_zeroed`]: its fresh pages' faults were a quarter of
/// ResNet-18's load + compile), a small one (or one whose length changes
/// while it is read) into a vector.
pub(crate) fn read_file(path: &Path) -> Result<Bytes> {
    let io = |e: std::io::Error| OnnxError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if let Some(mut buf) = usize::try_from(len).ok().and_then(large_zeroed) {
        let whole =
            file.read_exact(buf.bytes_mut()).is_ok() && matches!(file.read(&mut [0u8; 1]), Ok(0));
        if let Some(map) = buf.freeze().filter(|_| whole) {
            return Ok(Bytes::from_owner(map));
        }
    }
    std::fs::read(path).map(Bytes::from).map_err(io)
}

pub(crate) fn model_info(m: &ModelProto) -> ModelInfo {
    let opsets = m
        .opset_import
        .iter()
        .map(|o| (o.domain.clone().unwrap_or_default(), o.version.unwrap_or(1)))
        .collect();
    let g = m.graph.as_ref();
    ModelInfo {
        ir_version: m.ir_version.unwrap_or(0),
        opsets,
        producer_name: m.producer_name.clone().unwrap_or_default(),
        producer_version: m.producer_version.clone().unwrap_or_default(),
        domain: m.domain.clone().unwrap_or_default(),
        model_version: m.model_version.unwrap_or(0),
        doc_string: m.doc_string.clone().unwrap_or_default(),
        graph_name: g.and_then(|g| g.name.clone()).unwrap_or_default(),
        metadata: m
            .metadata_props
            .iter()
            .map(|p| {
                (
                    p.key.clone().unwrap_or_default(),
                    p.value.clone().unwrap_or_default(),
                )
            })
            .collect(),
    }
}

/// The tensor signature of a `ValueInfoProto`.
pub(crate) fn tensor_info(v: &ValueInfoProto) -> Result<TensorInfo> {
    let name = v.name.clone().unwrap_or_default();
    let what = format!("value \"{name}\"");
    let tensor = match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(type_proto::Value::TensorType(t)) => t,
        Some(_) => {
            return Err(OnnxError::Invalid(format!(
                "{what} is not a plain tensor (sequence / map / optional / sparse values are not supported)"
            )))
        }
        None => return Err(OnnxError::Invalid(format!("{what} has no type"))),
    };
    let elem_type = tensor.elem_type.unwrap_or(0);
    let dtype = dtype_of(elem_type, &what)?;
    let shape = tensor
        .shape
        .as_ref()
        .ok_or_else(|| OnnxError::Invalid(format!("{what} has no shape (its rank is unknown)")))?;
    if shape.dim.len() > crate::tensor::MAX_RANK {
        return Err(OnnxError::Invalid(format!(
            "{what} has rank {}",
            shape.dim.len()
        )));
    }
    let mut dims = Vec::with_capacity(shape.dim.len());
    for (i, d) in shape.dim.iter().enumerate() {
        dims.push(match &d.value {
            Some(dimension::Value::DimValue(n)) if *n >= 0 => Dim::Static(*n as usize),
            Some(dimension::Value::DimParam(p)) if !p.is_empty() => Dim::sym(p.clone()),
            // Unknown: no value, an empty dim_param, or a negative dim_value
            // (exporters write -1 for a dynamic axis; ONNX Runtime reads it as
            // unknown). Each gets its own symbol, never shared with another.
            _ => Dim::sym(format!("{name}:{i}")),
        });
    }
    crate::import::check_size(&dims).map_err(|e| OnnxError::Invalid(format!("{what}: {e}")))?;
    Ok(TensorInfo {
        name,
        dtype,
        elem_type,
        dims,
    })
}
