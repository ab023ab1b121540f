//! ONNX `TensorProto` <-> [`HostTensor`]: element types, raw / typed /
//! external data, every size checked before allocating.

use crate::proto::{tensor_proto::DataType, TensorProto};
use crate::{OnnxError, Result};
use prost::Message;
use rlx_ir::{DType, HostTensor};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The largest tensor (in bytes) a file may declare: 16 GiB.
pub const MAX_TENSOR_BYTES: u64 = 16 << 30;
/// The largest rank a tensor may declare.
pub const MAX_RANK: usize = 64;

/// The RLX dtype of an ONNX element type, or an [`OnnxError::UnsupportedDType`].
pub fn dtype_of(elem_type: i32, what: &str) -> Result<DType> {
    let dt = DataType::try_from(elem_type).ok();
    let d = match dt {
        Some(DataType::Float) => DType::F32,
        Some(DataType::Uint8) => DType::U8,
        Some(DataType::Int8) => DType::I8,
        Some(DataType::Int16) => DType::I16,
        Some(DataType::Int32) => DType::I32,
        Some(DataType::Int64) => DType::I64,
        Some(DataType::Bool) => DType::Bool,
        Some(DataType::Float16) => DType::F16,
        Some(DataType::Double) => DType::F64,
        Some(DataType::Uint32) => DType::U32,
        Some(DataType::Bfloat16) => DType::BF16,
        Some(DataType::Complex64) => DType::C64,
        _ if crate::narrow::storage_dtype(elem_type).is_some() => {
            crate::narrow::storage_dtype(elem_type).expect("checked")
        }
        _ => {
            return Err(OnnxError::UnsupportedDType {
                what: what.to_string(),
                elem_type,
                type_name: dt.map_or("unknown".into(), |d| d.as_str_name().to_string()),
            })
        }
    };
    Ok(d)
}

/// The ONNX element type of an RLX dtype.
pub fn elem_type_of(d: DType) -> i32 {
    let t = match d {
        DType::F32 => DataType::Float,
        DType::U8 => DataType::Uint8,
        DType::I8 => DataType::Int8,
        DType::I16 => DataType::Int16,
        DType::I32 => DataType::Int32,
        DType::I64 => DataType::Int64,
        DType::Bool => DataType::Bool,
        DType::F16 => DataType::Float16,
        DType::F64 => DataType::Double,
        DType::U32 => DataType::Uint32,
        DType::BF16 => DataType::Bfloat16,
        DType::C64 => DataType::Complex64,
        DType::U16 => DataType::Uint16,
        DType::U64 => DataType::Uint64,
        DType::F8E4M3 => DataType::Float8e4m3fn,
        DType::F8E5M2 => DataType::Float8e5m2,
        DType::F8E8M0 => DataType::Float8e8m0,
        DType::F8E4M3Fnuz => DataType::Float8e4m3fnuz,
        DType::F8E5M2Fnuz => DataType::Float8e5m2fnuz,
    };
    t as i32
}

/// Checked dims of a tensor: non-negative, bounded rank, element count and
/// byte size within [`MAX_TENSOR_BYTES`]. Returns (dims, numel).
pub(crate) fn checked_dims(
    raw: &[i64],
    elem_bytes: usize,
    name: &str,
) -> Result<(Vec<usize>, usize)> {
    let bad = |reason: String| OnnxError::Tensor {
        name: name.to_string(),
        reason,
    };
    if raw.len() > MAX_RANK {
        return Err(bad(format!(
            "rank {} exceeds the limit {MAX_RANK}",
            raw.len()
        )));
    }
    let mut numel: u64 = 1;
    let mut dims = Vec::with_capacity(raw.len());
    for &d in raw {
        if d < 0 {
            return Err(bad(format!("negative dim {d} in {raw:?}")));
        }
        numel = numel
            .checked_mul(d as u64)
            .filter(|n| n.saturating_mul(elem_bytes as u64) <= MAX_TENSOR_BYTES)
            .ok_or_else(|| bad(format!("dims {raw:?} exceed {MAX_TENSOR_BYTES} bytes")))?;
        dims.push(d as usize);
    }
    Ok((dims, numel as usize))
}

fn typed_bytes(t: &TensorProto, dtype: DType, numel: usize, name: &str) -> Result<Vec<u8>> {
    let count_err = |given: usize, field: &str| OnnxError::Tensor {
        name: name.to_string(),
        reason: format!("{field} holds {given} values, the dims need {numel}"),
    };
    let mut out = Vec::new();
    macro_rules! take {
        ($field:ident, $n:expr, |$v:ident| $conv:expr) => {{
            if t.$field.len() != $n {
                return Err(count_err(t.$field.len(), stringify!($field)));
            }
            out.reserve($n * dtype.size_bytes());
            for &$v in &t.$field {
                out.extend_from_slice(&$conv);
            }
        }};
    }
    match dtype {
        DType::F32 => take!(float_data, numel, |v| v.to_le_bytes()),
        DType::C64 => take!(float_data, numel * 2, |v| v.to_le_bytes()),
        DType::F64 => take!(double_data, numel, |v| v.to_le_bytes()),
        DType::I64 => take!(int64_data, numel, |v| v.to_le_bytes()),
        DType::U32 => take!(uint64_data, numel, |v| (v as u32).to_le_bytes()),
        DType::I32 => take!(int32_data, numel, |v| v.to_le_bytes()),
        DType::I16 => take!(int32_data, numel, |v| (v as i16).to_le_bytes()),
        DType::I8 => take!(int32_data, numel, |v| (v as i8).to_le_bytes()),
        DType::U8 => take!(int32_data, numel, |v| (v as u8).to_le_bytes()),
        DType::Bool => take!(int32_data, numel, |v| [(v != 0) as u8]),
        // float16 / bfloat16 travel as their bit patterns in int32_data.
        DType::F16 | DType::BF16 => take!(int32_data, numel, |v| (v as u16).to_le_bytes()),
        // Not produced by dtype_of (those ONNX types import as narrow values,
        // see crate::narrow); read as ONNX stores them all the same.
        DType::U16 => take!(int32_data, numel, |v| (v as u16).to_le_bytes()),
        DType::U64 => take!(uint64_data, numel, |v| v.to_le_bytes()),
        DType::F8E4M3 | DType::F8E5M2 | DType::F8E8M0 | DType::F8E4M3Fnuz | DType::F8E5M2Fnuz => {
            take!(int32_data, numel, |v| [v as u8])
        }
    }
    Ok(out)
}

fn external_entry<'a>(t: &'a TensorProto, key: &str) -> Option<&'a str> {
    t.external_data
        .iter()
        .find(|e| e.key.as_deref() == Some(key))
        .and_then(|e| e.value.as_deref())
}

fn external_bytes(
    t: &TensorProto,
    base_dir: Option<&Path>,
    size: usize,
    name: &str,
) -> Result<Vec<u8>> {
    let bad = |reason: String| OnnxError::Tensor {
        name: name.to_string(),
        reason,
    };
    let base = base_dir.ok_or_else(|| {
        bad(
            "uses external data but the model was loaded from bytes without a base directory"
                .into(),
        )
    })?;
    let location = external_entry(t, "location")
        .ok_or_else(|| bad("external data without a location".into()))?;
    let rel = Path::new(location);
    // The location must stay inside the model's directory.
    if rel.is_absolute()
        || rel.components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
    {
        return Err(bad(format!(
            "external data location \"{location}\" leaves the model directory"
        )));
    }
    let parse = |key: &str| -> Result<Option<u64>> {
        external_entry(t, key)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| bad(format!("external data {key} \"{v}\" is not a number")))
            })
            .transpose()
    };
    let offset = parse("offset")?.unwrap_or(0);
    let length = parse("length")?.unwrap_or(size as u64);
    if length != size as u64 {
        return Err(bad(format!(
            "external data length {length} but the dims need {size} bytes"
        )));
    }
    let path = base.join(rel);
    let io = |e: std::io::Error| OnnxError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut f = std::fs::File::open(&path).map_err(io)?;
    let file_len = f.metadata().map_err(io)?.len();
    if offset.checked_add(length).is_none_or(|end| end > file_len) {
        return Err(bad(format!(
            "external data [{offset}, {offset}+{length}) runs past the end of {} ({file_len} bytes)",
            path.display()
        )));
    }
    f.seek(SeekFrom::Start(offset)).map_err(io)?;
    let mut out = vec![0u8; size];
    f.read_exact(&mut out).map_err(io)?;
    Ok(out)
}

/// Decodes a `TensorProto` into a [`HostTensor`]; `base_dir` resolves
/// external data (`None`: external data is an error).
pub fn tensor_from_proto(t: &TensorProto, base_dir: Option<&Path>) -> Result<HostTensor> {
    let name = t.name.clone().unwrap_or_default();
    let dtype = dtype_of(t.data_type.unwrap_or(0), &format!("tensor \"{name}\""))?;
    if t.segment.is_some() {
        return Err(OnnxError::Tensor {
            name,
            reason: "segmented tensors are not supported".into(),
        });
    }
    let (dims, numel) = checked_dims(&t.dims, dtype.size_bytes(), &name)?;
    let elem_type = t.data_type.unwrap_or(0);
    if crate::narrow::storage_dtype(elem_type).is_some() {
        let bytes = narrow_storage(t, elem_type, numel, base_dir, &name)?;
        return Ok(HostTensor::from_bytes(dtype, &dims, bytes)?);
    }
    let size = numel * dtype.size_bytes();
    let external =
        t.data_location == Some(crate::proto::tensor_proto::DataLocation::External as i32);
    let bytes = if external {
        external_bytes(t, base_dir, size, &name)?
    } else if let Some(raw) = &t.raw_data {
        if raw.len() != size {
            return Err(OnnxError::Tensor {
                name,
                reason: format!(
                    "raw_data holds {} bytes, the dims {dims:?} of {dtype} need {size}",
                    raw.len()
                ),
            });
        }
        if dtype != DType::Bool {
            // A slice of the decoded file, shared (no copy).
            let shared = rlx_ir::ConstBytes::from_owner(raw.clone());
            return Ok(HostTensor::from_shared(dtype, &dims, shared)?);
        }
        raw.iter().map(|&b| (b != 0) as u8).collect()
    } else {
        typed_bytes(t, dtype, numel, &name)?
    };
    Ok(HostTensor::from_bytes(dtype, &dims, bytes)?)
}

/// The storage bytes of a tensor of a type RLX keeps wider (see [`crate::narrow`]).
fn narrow_storage(
    t: &TensorProto,
    elem_type: i32,
    numel: usize,
    base_dir: Option<&Path>,
    name: &str,
) -> Result<Vec<u8>> {
    use crate::narrow::{packed_int, unpack, MiniFloat};
    let bad = |reason: String| OnnxError::Tensor {
        name: name.to_string(),
        reason,
    };
    // (bits per element in the file, signed) and the file's byte count.
    let (bits, signed) = match (MiniFloat::of(elem_type), packed_int(elem_type)) {
        (Some(f), _) => (if f.bits() == 4 { 4 } else { 8 }, false),
        (None, Some(p)) => p,
        _ if crate::narrow::is_e8m0(elem_type) => (8, false),
        _ if elem_type == DataType::Uint16 as i32 => (16, false),
        _ => (64, false),
    };
    let file_bytes = (numel * bits as usize).div_ceil(8);
    let external =
        t.data_location == Some(crate::proto::tensor_proto::DataLocation::External as i32);
    let raw: Vec<u8> = if external {
        external_bytes(t, base_dir, file_bytes, name)?
    } else if let Some(raw) = &t.raw_data {
        if raw.len() != file_bytes {
            return Err(bad(format!(
                "raw_data holds {} bytes, {numel} elements need {file_bytes}",
                raw.len()
            )));
        }
        raw.to_vec()
    } else if bits == 64 {
        if t.uint64_data.len() != numel {
            return Err(bad(format!(
                "uint64_data holds {} values, the dims need {numel}",
                t.uint64_data.len()
            )));
        }
        return Ok(t.uint64_data.iter().flat_map(|v| v.to_le_bytes()).collect());
    } else if t.int32_data.len() == numel {
        // One element per int32.
        return Ok(match bits {
            16 => t
                .int32_data
                .iter()
                .flat_map(|&v| (v as u16 as i32).to_le_bytes())
                .collect(),
            8 => t.int32_data.iter().map(|&v| v as u8).collect(),
            _ => {
                let mask = (1i32 << bits) - 1;
                let sign = 1i32 << (bits - 1);
                t.int32_data
                    .iter()
                    .map(|&v| {
                        let v = v & mask;
                        (if signed && v & sign != 0 {
                            v - (1 << bits)
                        } else {
                            v
                        }) as u8
                    })
                    .collect()
            }
        });
    } else if t.int32_data.len() == file_bytes {
        t.int32_data.iter().map(|&v| v as u8).collect()
    } else {
        return Err(bad(format!(
            "int32_data holds {} values, the dims need {numel}",
            t.int32_data.len()
        )));
    };
    Ok(match bits {
        64 => raw,
        16 => raw
            .chunks_exact(2)
            .flat_map(|c| i32::from(u16::from_le_bytes([c[0], c[1]])).to_le_bytes())
            .collect(),
        8 => raw,
        b => unpack(&raw, numel, b, signed),
    })
}

/// Decodes serialized `TensorProto` bytes (an ONNX test's `input_0.pb`).
pub fn tensor_from_proto_bytes(bytes: &[u8]) -> Result<(String, HostTensor)> {
    let t = TensorProto::decode(bytes).map_err(|e| OnnxError::Decode {
        what: "TensorProto".into(),
        message: e.to_string(),
    })?;
    let name = t.name.clone().unwrap_or_default();
    Ok((name, tensor_from_proto(&t, None)?))
}

/// Reads a serialized `TensorProto` file: (its name, the tensor).
pub fn read_tensor_file(path: impl AsRef<Path>) -> Result<(String, HostTensor)> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| OnnxError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    tensor_from_proto_bytes(&bytes)
}

/// A tensor's values as `i64` (integer or bool dtypes; floats truncate).
pub(crate) fn to_i64s(t: &HostTensor) -> Vec<i64> {
    match t.dtype() {
        DType::I64 => t.to_vec::<i64>().unwrap_or_default(),
        DType::I32 => t
            .to_vec::<i32>()
            .unwrap_or_default()
            .into_iter()
            .map(i64::from)
            .collect(),
        _ => t.to_f64_lossy().into_iter().map(|v| v as i64).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_and_raw_fields_agree() {
        let typed = TensorProto {
            dims: vec![2],
            data_type: Some(DataType::Float as i32),
            float_data: vec![1.5, -2.0],
            ..Default::default()
        };
        let raw = TensorProto {
            dims: vec![2],
            data_type: Some(DataType::Float as i32),
            raw_data: Some(
                [1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()]
                    .concat()
                    .into(),
            ),
            ..Default::default()
        };
        let a = tensor_from_proto(&typed, None).unwrap();
        let b = tensor_from_proto(&raw, None).unwrap();
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.5, -2.0]);
        assert_eq!(a, b);
    }

    #[test]
    fn huge_dims_are_an_error_not_an_allocation() {
        let t = TensorProto {
            dims: vec![1 << 40, 1 << 40],
            data_type: Some(DataType::Float as i32),
            ..Default::default()
        };
        let e = tensor_from_proto(&t, None).unwrap_err();
        assert!(e.to_string().contains("exceed"), "{e}");
    }
}
