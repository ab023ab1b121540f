//! The conversion itself: source tensors in, a filled [`GgufWriter`] and a
//! [`ConvertReport`] out.

use crate::error::{ConvertError, Result};
use crate::options::Converter;
use crate::report::{Choice, ConvertReport, TensorReport};
use rlx_gguf::{codecs, GgmlType, GgufWriter, Metadata, Value, KEY_ALIGNMENT};
use rlx_ir::{DType, HostTensor};
use std::borrow::Cow;
use std::path::Path;

/// ggml's quantization format version, written as
/// `general.quantization_version` when a tensor is quantized (as gguf-py's
/// `add_quantization_version` does).
pub const GGML_QUANT_VERSION: u32 = 2;
const KEY_QUANT_VERSION: &str = "general.quantization_version";

/// A source element type: what GGUF can store, or the source's own name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Elem {
    /// A float type, read as f32.
    Float(DType),
    /// An integer type GGUF stores as is.
    Int(DType),
    /// Anything else (the source's name for it).
    Other(String),
}

impl Elem {
    pub(crate) fn from_dtype(d: DType) -> Elem {
        match d {
            DType::F32 | DType::F16 | DType::BF16 | DType::F64 => Elem::Float(d),
            DType::I8 | DType::I16 | DType::I32 | DType::I64 => Elem::Int(d),
            other => Elem::Other(other.to_string()),
        }
    }

    fn name(&self) -> String {
        match self {
            Elem::Float(d) | Elem::Int(d) => d.to_string(),
            Elem::Other(s) => s.clone(),
        }
    }
}

/// One tensor of a source: name, element type, row-major dims, LE bytes.
pub(crate) struct SourceTensor<'a> {
    pub name: String,
    pub elem: Elem,
    pub dims: Vec<usize>,
    pub bytes: Cow<'a, [u8]>,
}

/// Metadata copied from a source: the key prefix and its string pairs.
pub(crate) struct SourceMetadata {
    pub prefix: &'static str,
    pub pairs: Vec<(String, String)>,
}

/// A finished conversion: the writer (add more, or write it whole or
/// split) and the report.
#[derive(Debug)]
pub struct Conversion {
    /// Holds the metadata and every converted tensor.
    pub writer: GgufWriter,
    /// What happened to each tensor.
    pub report: ConvertReport,
}

impl Conversion {
    /// The GGUF file as bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.writer
            .to_bytes()
            .map_err(ConvertError::gguf("writing GGUF"))
    }

    /// Writes the GGUF file to `path`; returns the report with
    /// `file_bytes` set.
    pub fn write_file(self, path: impl AsRef<Path>) -> Result<ConvertReport> {
        let path = path.as_ref();
        let bytes = self.to_bytes()?;
        std::fs::write(path, &bytes).map_err(|source| ConvertError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let mut report = self.report;
        report.file_bytes = Some(bytes.len() as u64);
        Ok(report)
    }
}

impl Converter {
    /// Converts in-memory tensors (name, tensor), in the order given.
    pub fn convert_tensors<I, S>(&self, tensors: I) -> Result<Conversion>
    where
        I: IntoIterator<Item = (S, HostTensor)>,
        S: Into<String>,
    {
        let sources = tensors.into_iter().map(|(name, t)| {
            Ok(SourceTensor {
                name: name.into(),
                elem: Elem::from_dtype(t.dtype()),
                dims: t.dims().to_vec(),
                bytes: Cow::Owned(t.into_bytes()),
            })
        });
        self.convert_sources(sources, None)
    }

    pub(crate) fn convert_sources<'a>(
        &self,
        sources: impl IntoIterator<Item = Result<SourceTensor<'a>>>,
        source_metadata: Option<SourceMetadata>,
    ) -> Result<Conversion> {
        self.validate()?;
        let mut writer = GgufWriter::new();
        let mut report = ConvertReport::default();
        for src in sources {
            let src = src?;
            let (ty, data, entry) = self.convert_one(&src)?;
            let ne: Vec<u64> = src.dims.iter().rev().map(|&d| d as u64).collect();
            writer
                .add_tensor_bytes(&src.name, &ne, ty, data)
                .map_err(ConvertError::gguf(format!("tensor '{}'", src.name)))?;
            report.tensors.push(entry);
        }
        let any_quantized = report.tensors.iter().any(|t| t.ty.is_quantized());
        for (key, value) in self.output_metadata(source_metadata, any_quantized).iter() {
            writer
                .add_metadata(key, value.clone())
                .map_err(ConvertError::gguf(format!("metadata key '{key}'")))?;
        }
        Ok(Conversion { writer, report })
    }

    /// Source keys (prefixed, sorted), then the user's keys (which win),
    /// then the alignment and the quantization version unless set.
    fn output_metadata(&self, source: Option<SourceMetadata>, any_quantized: bool) -> Metadata {
        let mut m = Metadata::new();
        if let (true, Some(src)) = (self.passthrough, source) {
            let mut pairs = src.pairs;
            pairs.sort();
            for (k, v) in pairs {
                m.set(format!("{}{k}", src.prefix), Value::String(v));
            }
        }
        for (k, v) in self.metadata.iter() {
            m.set(k, v.clone());
        }
        if let Some(a) = self.alignment {
            m.set(KEY_ALIGNMENT, Value::U32(a));
        }
        if any_quantized && !m.contains_key(KEY_QUANT_VERSION) {
            m.set(KEY_QUANT_VERSION, Value::U32(GGML_QUANT_VERSION));
        }
        m
    }

    fn convert_one(&self, src: &SourceTensor<'_>) -> Result<(GgmlType, Vec<u8>, TensorReport)> {
        let name = &src.name;
        let numel = src
            .dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| ConvertError::InvalidTensor {
                tensor: name.clone(),
                reason: format!("shape {:?} overflows usize", src.dims),
            })?;
        let dtype = match &src.elem {
            Elem::Float(d) | Elem::Int(d) => *d,
            Elem::Other(s) => {
                return Err(ConvertError::UnsupportedDtype {
                    tensor: name.clone(),
                    dtype: s.clone(),
                })
            }
        };
        // Checked before any decoding, so a short buffer is an error, not a panic.
        let expected = numel.checked_mul(dtype.size_bytes());
        if expected != Some(src.bytes.len()) {
            return Err(ConvertError::InvalidTensor {
                tensor: name.clone(),
                reason: format!(
                    "{dtype} shape {:?} needs {} bytes, the source has {}",
                    src.dims,
                    expected.map_or("more than usize::MAX".into(), |n| n.to_string()),
                    src.bytes.len()
                ),
            });
        }
        let mut entry = TensorReport {
            name: name.clone(),
            shape: src.dims.clone(),
            source_dtype: src.elem.name(),
            requested: GgmlType::F32,
            choice: Choice::Integer,
            ty: GgmlType::F32,
            fell_back: false,
            bytes_before: src.bytes.len() as u64,
            bytes_after: src.bytes.len() as u64,
            cosine: 1.0,
        };
        if let Elem::Int(d) = src.elem {
            // Integers are stored bit for bit: the cosine is exactly 1.
            let ty = GgmlType::from_dtype(d).expect("Elem::Int holds a GGUF integer dtype");
            entry.requested = ty;
            entry.ty = ty;
            return Ok((ty, src.bytes.to_vec(), entry));
        }
        let (requested, choice) = self.requested(name, &src.dims)?;
        let row = src.dims.last().copied().unwrap_or(1);
        let fits = row % requested.block_size() == 0;
        let ty = if fits { requested } else { self.fallback };
        let values = floats_to_f32(dtype, &src.bytes);
        if ty.block_size() > 1 {
            if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(ConvertError::NonFinite {
                    tensor: name.clone(),
                    index,
                    value,
                    ty,
                });
            }
        }
        let ctx = || format!("tensor '{name}' as {ty}");
        let data = codecs::quantize(ty, &values).map_err(ConvertError::gguf(ctx()))?;
        let back = codecs::dequantize(ty, &data, numel).map_err(ConvertError::gguf(ctx()))?;
        entry.requested = requested;
        entry.choice = choice;
        entry.ty = ty;
        entry.fell_back = !fits;
        entry.bytes_after = data.len() as u64;
        entry.cosine = cosine(&values, &back);
        Ok((ty, data, entry))
    }
}

/// Widens float data (LE bytes of a float dtype) to f32.
fn floats_to_f32(dtype: DType, bytes: &[u8]) -> Vec<f32> {
    match dtype {
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        DType::BF16 => bytes
            .chunks_exact(2)
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        DType::F64 => bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("chunk of 8")) as f32)
            .collect(),
        _ => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("chunk of 4")))
            .collect(),
    }
}

/// Cosine similarity in f64; 1 for two zero vectors, 0 if only one is zero.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    match (aa == 0.0, bb == 0.0) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        _ => ab / (aa.sqrt() * bb.sqrt()),
    }
}
