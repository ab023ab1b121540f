//! Writing safetensors files: [`serialize_safetensors`] and
//! [`save_safetensors`].
//!
//! The layout is the one the `safetensors` packages write (so a file
//! written by Python reads back and writes again byte for byte): the
//! header JSON lists `__metadata__` first (its keys sorted), then the
//! tensors in descending order of dtype alignment, then by name, with
//! contiguous data offsets in that order; the header is padded with spaces
//! to a multiple of 8 bytes.

use super::dtype::st_dtype;
use super::WeightError;
use rlx_ir::{ErrorSource, HostTensor};
use safetensors::tensor::TensorInfo;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// The bytes of a safetensors file holding `tensors` (name, tensor; any
/// [`rlx_ir::DType`]) and the free-form `metadata` strings.
///
/// A name given twice, or a tensor named `__metadata__`, is a
/// [`WeightError::Write`] naming it.
///
/// ```
/// use rlx_runtime::weights::serialize_safetensors;
/// use rlx_runtime::{BytesWeightLoader, WeightLoader};
/// use rlx_ir::{f8::F8E4M3, HostTensor};
/// let w = HostTensor::from_vec(vec![F8E4M3::from_f32(0.5), F8E4M3::from_f32(-448.0)], &[2]).unwrap();
/// let bytes = serialize_safetensors([("w", &w)], None).unwrap();
/// let back = BytesWeightLoader::from_bytes(bytes).unwrap();
/// assert_eq!(back.get("w").unwrap(), w);
/// ```
pub fn serialize_safetensors<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a HostTensor)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<Vec<u8>, WeightError> {
    serialize_named("<bytes>", tensors, metadata)
}

/// Writes [`serialize_safetensors`]'s bytes to `path` (replacing a file
/// there). Nothing is written when the tensors are refused.
pub fn save_safetensors<'a>(
    path: impl AsRef<Path>,
    tensors: impl IntoIterator<Item = (&'a str, &'a HostTensor)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<(), WeightError> {
    let path = path.as_ref();
    let target = path.display().to_string();
    let bytes = serialize_named(&target, tensors, metadata)?;
    std::fs::write(path, bytes).map_err(|e| WeightError::Io {
        source_name: target,
        source: ErrorSource::new(e),
    })
}

fn serialize_named<'a>(
    target: &str,
    tensors: impl IntoIterator<Item = (&'a str, &'a HostTensor)>,
    metadata: Option<&HashMap<String, String>>,
) -> Result<Vec<u8>, WeightError> {
    let refuse = |reason: String| WeightError::Write {
        target: target.to_string(),
        reason,
    };
    let mut rows: Vec<(&str, &HostTensor)> = tensors.into_iter().collect();
    let mut seen = HashSet::new();
    for (name, _) in &rows {
        if *name == "__metadata__" {
            return Err(refuse(
                "a tensor cannot be named \"__metadata__\" (the header's metadata key)".into(),
            ));
        }
        if !seen.insert(*name) {
            return Err(refuse(format!("tensor \"{name}\" is given twice")));
        }
    }
    rows.sort_by(|(a, x), (b, y)| {
        st_dtype(y.dtype())
            .cmp(&st_dtype(x.dtype()))
            .then_with(|| a.cmp(b))
    });
    let mut header = String::from("{");
    if let Some(m) = metadata {
        let sorted: BTreeMap<&String, &String> = m.iter().collect();
        header.push_str("\"__metadata__\":");
        header.push_str(&json(&sorted));
    }
    let mut offset = 0;
    for (name, t) in &rows {
        if header.len() > 1 {
            header.push(',');
        }
        let info = TensorInfo {
            dtype: st_dtype(t.dtype()),
            shape: t.dims().to_vec(),
            data_offsets: (offset, offset + t.bytes().len()),
        };
        offset += t.bytes().len();
        header.push_str(&json(name));
        header.push(':');
        header.push_str(&json(&info));
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = Vec::with_capacity(8 + header.len() + offset);
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    for (_, t) in rows {
        out.extend_from_slice(t.bytes());
    }
    Ok(out)
}

/// JSON text of a header piece (strings, a string map, a `TensorInfo`:
/// these always serialize).
fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).expect("JSON of strings and integers")
}
