//! Checks of a safetensors header beyond the `safetensors` crate's: its
//! length, duplicate names, and why the crate refused a file.

use safetensors::tensor::{Dtype as StDtype, SafeTensorError};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// The header length of `buf`, checked against the file length.
pub(super) fn header_len(buf: &[u8]) -> std::result::Result<usize, String> {
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
pub(super) fn diagnose(buf: &[u8], n: usize, err: &SafeTensorError) -> String {
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

/// The largest header the `safetensors` crate parses (its
/// `MAX_HEADER_SIZE`); a longer one is refused before any scan.
const MAX_HEADER_BYTES: usize = 100_000_000;

/// A key that appears twice in a header: a tensor name, `__metadata__`,
/// or a key inside `__metadata__`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Duplicate {
    /// A top-level key (a tensor, or `__metadata__` itself).
    Key(String),
    /// A key of the `__metadata__` object.
    MetadataKey(String),
}

/// The first key named twice in the header JSON `header` (top level or in
/// `__metadata__`), compared after unescaping. JSON parsers keep one of the
/// two silently (the `safetensors` crate the last), so such a file means
/// different things to different readers. `None` when there is none, or
/// when the header is not a JSON object (the crate then says why).
pub(super) fn duplicate_key(header: &[u8]) -> Option<Duplicate> {
    if header.len() > MAX_HEADER_BYTES {
        // The crate refuses it without parsing; so need we.
        return None;
    }
    let mut de = serde_json::Deserializer::from_slice(header);
    de.deserialize_map(TopLevel).ok().flatten()
}

/// Visits the header object's keys.
struct TopLevel;

impl<'de> Visitor<'de> for TopLevel {
    type Value = Option<Duplicate>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = HashSet::new();
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "__metadata__" {
                if let MetadataKeys::Object(Some(k)) = map.next_value::<MetadataKeys>()? {
                    found.get_or_insert(Duplicate::MetadataKey(k));
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
            if !seen.insert(key.clone()) {
                found.get_or_insert(Duplicate::Key(key));
            }
        }
        Ok(found)
    }
}

/// The `__metadata__` value as far as duplicates go.
enum MetadataKeys {
    /// Not an object (the crate refuses it).
    Other,
    /// An object, with the first key it names twice.
    Object(Option<String>),
}

impl<'de> serde::Deserialize<'de> for MetadataKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MetadataVisitor)
    }
}

struct MetadataVisitor;

impl<'de> Visitor<'de> for MetadataVisitor {
    type Value = MetadataKeys;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = HashSet::new();
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            if !seen.insert(key.clone()) && found.is_none() {
                found = Some(key);
            }
        }
        Ok(MetadataKeys::Object(found))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MetadataKeys::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(MetadataKeys::Other)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MetadataKeys::Other)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MetadataKeys::Other)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MetadataKeys::Other)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(MetadataKeys::Other)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(MetadataKeys::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found_after_unescaping() {
        let t = |s: &str| duplicate_key(s.as_bytes());
        assert_eq!(t(r#"{"a":{},"b":[1,{"a":2}],"c":"a"}"#), None);
        assert_eq!(
            t(r#"{"a":1,"b":2,"a":3}"#),
            Some(Duplicate::Key("a".into()))
        );
        assert_eq!(
            t(r#"{"ab":1,"a\u0062":3}"#),
            Some(Duplicate::Key("ab".into()))
        );
        assert_eq!(
            t(r#"{"__metadata__":{"k":"1","k":"2"}}"#),
            Some(Duplicate::MetadataKey("k".into()))
        );
        assert_eq!(
            t(r#"{"__metadata__":{},"x":1,"__metadata__":{}}"#),
            Some(Duplicate::Key("__metadata__".into()))
        );
        assert_eq!(t(r#"{"__metadata__":7,"x":1}"#), None);
        assert_eq!(t("not json"), None);
        assert_eq!(t("[1,2]"), None);
        // A nested object may repeat keys: the crate's own parse rejects a
        // repeated field of a tensor entry.
        assert_eq!(t(r#"{"a":{"x":1,"x":2}}"#), None);
    }
}
