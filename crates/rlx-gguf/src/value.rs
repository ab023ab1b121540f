//! Typed metadata: [`ValueType`], [`Value`], [`Array`] and the ordered
//! key/value table [`Metadata`].

use crate::error::{GgufError, Result};
use std::collections::HashMap;
use std::fmt;

/// The type of a metadata value (`gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ValueType {
    /// `u8`.
    U8 = 0,
    /// `i8`.
    I8 = 1,
    /// `u16`.
    U16 = 2,
    /// `i16`.
    I16 = 3,
    /// `u32`.
    U32 = 4,
    /// `i32`.
    I32 = 5,
    /// `f32`.
    F32 = 6,
    /// One byte, 0 or 1.
    Bool = 7,
    /// Length-prefixed UTF-8.
    String = 8,
    /// Element type, length, elements (which may themselves be arrays).
    Array = 9,
    /// `u64`.
    U64 = 10,
    /// `i64`.
    I64 = 11,
    /// `f64`.
    F64 = 12,
}

impl ValueType {
    /// Every value type, in id order.
    pub const ALL: [ValueType; 13] = [
        ValueType::U8,
        ValueType::I8,
        ValueType::U16,
        ValueType::I16,
        ValueType::U32,
        ValueType::I32,
        ValueType::F32,
        ValueType::Bool,
        ValueType::String,
        ValueType::Array,
        ValueType::U64,
        ValueType::I64,
        ValueType::F64,
    ];

    /// The type with file id `id`.
    pub fn from_id(id: u32) -> Option<ValueType> {
        ValueType::ALL.get(id as usize).copied()
    }

    /// The id stored in the file.
    pub const fn id(self) -> u32 {
        self as u32
    }

    /// Size of one value of a fixed-size type; `None` for strings and arrays.
    pub const fn fixed_size(self) -> Option<usize> {
        use ValueType::*;
        match self {
            U8 | I8 | Bool => Some(1),
            U16 | I16 => Some(2),
            U32 | I32 | F32 => Some(4),
            U64 | I64 | F64 => Some(8),
            String | Array => None,
        }
    }

    /// gguf-py's name (`UINT8`, `STRING`, ...).
    pub const fn name(self) -> &'static str {
        use ValueType::*;
        match self {
            U8 => "UINT8",
            I8 => "INT8",
            U16 => "UINT16",
            I16 => "INT16",
            U32 => "UINT32",
            I32 => "INT32",
            F32 => "FLOAT32",
            Bool => "BOOL",
            String => "STRING",
            Array => "ARRAY",
            U64 => "UINT64",
            I64 => "INT64",
            F64 => "FLOAT64",
        }
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `u8`.
    U8(u8),
    /// `i8`.
    I8(i8),
    /// `u16`.
    U16(u16),
    /// `i16`.
    I16(i16),
    /// `u32`.
    U32(u32),
    /// `i32`.
    I32(i32),
    /// `f32`.
    F32(f32),
    /// `bool`.
    Bool(bool),
    /// A UTF-8 string.
    String(String),
    /// A typed array (possibly of arrays).
    Array(Array),
    /// `u64`.
    U64(u64),
    /// `i64`.
    I64(i64),
    /// `f64`.
    F64(f64),
}

impl Value {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::U8(_) => ValueType::U8,
            Value::I8(_) => ValueType::I8,
            Value::U16(_) => ValueType::U16,
            Value::I16(_) => ValueType::I16,
            Value::U32(_) => ValueType::U32,
            Value::I32(_) => ValueType::I32,
            Value::F32(_) => ValueType::F32,
            Value::Bool(_) => ValueType::Bool,
            Value::String(_) => ValueType::String,
            Value::Array(_) => ValueType::Array,
            Value::U64(_) => ValueType::U64,
            Value::I64(_) => ValueType::I64,
            Value::F64(_) => ValueType::F64,
        }
    }

    /// Any integer value that is non-negative, widened to `u64`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => Some(v),
            Value::I8(v) => u64::try_from(v).ok(),
            Value::I16(v) => u64::try_from(v).ok(),
            Value::I32(v) => u64::try_from(v).ok(),
            Value::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any integer value that fits, widened to `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::U8(v) => Some(v.into()),
            Value::U16(v) => Some(v.into()),
            Value::U32(v) => Some(v.into()),
            Value::U64(v) => i64::try_from(v).ok(),
            Value::I8(v) => Some(v.into()),
            Value::I16(v) => Some(v.into()),
            Value::I32(v) => Some(v.into()),
            Value::I64(v) => Some(v),
            _ => None,
        }
    }

    /// A float value (`F32` widened) as `f64`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v.into()),
            Value::F64(v) => Some(v),
            _ => None,
        }
    }

    /// A bool value.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// A string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// An array value.
    pub fn as_array(&self) -> Option<&Array> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
}

macro_rules! value_from {
    ($($t:ty => $v:ident),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$v(v)
            }
        }
    )*};
}
value_from!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, f32 => F32,
    bool => Bool, String => String, Array => Array, u64 => U64, i64 => I64, f64 => F64);

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::String(v.to_owned())
    }
}

/// A metadata array: an element type and elements that all have it.
///
/// The element type is kept even when the array is empty, so an empty array
/// round-trips with its declared type.
///
/// ```
/// use rlx_gguf::{Array, Value, ValueType};
/// let tokens = Array::from_values(vec!["a", "b"]).unwrap();
/// assert_eq!(tokens.elem_type(), ValueType::String);
/// let nested = Array::new(ValueType::Array, vec![Value::Array(tokens)]).unwrap();
/// assert_eq!(nested.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    elem_type: ValueType,
    values: Vec<Value>,
}

impl Array {
    /// An array of `elem_type`; every value must have that type.
    pub fn new(elem_type: ValueType, values: Vec<Value>) -> Result<Array> {
        if let Some((index, v)) = values
            .iter()
            .enumerate()
            .find(|(_, v)| v.value_type() != elem_type)
        {
            return Err(GgufError::MixedArray {
                expected: elem_type,
                found: v.value_type(),
                index,
            });
        }
        Ok(Array { elem_type, values })
    }

    /// An array built from Rust values; the element type is the first
    /// value's (an empty list is refused, as it has no type: use [`Array::new`]).
    pub fn from_values<T: Into<Value>>(values: Vec<T>) -> Result<Array> {
        let values: Vec<Value> = values.into_iter().map(Into::into).collect();
        let Some(first) = values.first() else {
            return Err(GgufError::Invalid(
                "Array::from_values of an empty list: give the element type with Array::new".into(),
            ));
        };
        Array::new(first.value_type(), values)
    }

    /// Trusted constructor for the reader, which has already checked types.
    pub(crate) fn from_parts(elem_type: ValueType, values: Vec<Value>) -> Array {
        Array { elem_type, values }
    }

    /// The element type.
    pub fn elem_type(&self) -> ValueType {
        self.elem_type
    }

    /// The elements.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Element count.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The elements as strings, if this is an array of strings.
    pub fn as_strings(&self) -> Option<Vec<&str>> {
        self.values.iter().map(Value::as_str).collect()
    }

    /// The elements as `i64`, if this is an array of integers.
    pub fn as_i64s(&self) -> Option<Vec<i64>> {
        self.values.iter().map(Value::as_i64).collect()
    }

    /// The elements as `f64`, if this is an array of floats.
    pub fn as_f64s(&self) -> Option<Vec<f64>> {
        self.values.iter().map(Value::as_f64).collect()
    }
}

/// The metadata table: keys in file order, each with one typed value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    entries: Vec<(String, Value)>,
    index: HashMap<String, usize>,
}

impl Metadata {
    /// An empty table.
    pub fn new() -> Metadata {
        Metadata::default()
    }

    /// Adds a key; a key already present is an error.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) -> Result<()> {
        let key = key.into();
        if self.index.contains_key(&key) {
            return Err(GgufError::DuplicateKey { key, offset: None });
        }
        self.index.insert(key.clone(), self.entries.len());
        self.entries.push((key, value.into()));
        Ok(())
    }

    /// Sets a key, replacing any value it had (keeping its position).
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<Value>) {
        let key = key.into();
        match self.index.get(&key) {
            Some(&i) => self.entries[i].1 = value.into(),
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value.into()));
            }
        }
    }

    /// The value of a key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    /// Whether the key is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.index.contains_key(key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keys and values in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    fn require(&self, key: &str) -> Result<&Value> {
        self.get(key)
            .ok_or_else(|| GgufError::MissingKey { key: key.into() })
    }

    fn type_error(key: &str, expected: &str, v: &Value) -> GgufError {
        GgufError::MetadataType {
            key: key.into(),
            expected: expected.into(),
            found: v.value_type(),
        }
    }

    /// A string value; a missing key or another type is an error naming the key.
    pub fn get_str(&self, key: &str) -> Result<&str> {
        let v = self.require(key)?;
        v.as_str().ok_or_else(|| Self::type_error(key, "STRING", v))
    }

    /// Any non-negative integer value as `u64`.
    pub fn get_u64(&self, key: &str) -> Result<u64> {
        let v = self.require(key)?;
        v.as_u64()
            .ok_or_else(|| Self::type_error(key, "a non-negative integer", v))
    }

    /// Any integer value as `i64`.
    pub fn get_i64(&self, key: &str) -> Result<i64> {
        let v = self.require(key)?;
        v.as_i64()
            .ok_or_else(|| Self::type_error(key, "an integer", v))
    }

    /// A float value as `f64`.
    pub fn get_f64(&self, key: &str) -> Result<f64> {
        let v = self.require(key)?;
        v.as_f64()
            .ok_or_else(|| Self::type_error(key, "FLOAT32 or FLOAT64", v))
    }

    /// A bool value.
    pub fn get_bool(&self, key: &str) -> Result<bool> {
        let v = self.require(key)?;
        v.as_bool().ok_or_else(|| Self::type_error(key, "BOOL", v))
    }

    /// An array value.
    pub fn get_array(&self, key: &str) -> Result<&Array> {
        let v = self.require(key)?;
        v.as_array()
            .ok_or_else(|| Self::type_error(key, "ARRAY", v))
    }
}

impl<'a> IntoIterator for &'a Metadata {
    type Item = (&'a str, &'a Value);
    type IntoIter = Box<dyn Iterator<Item = (&'a str, &'a Value)> + 'a>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_getters_name_the_key() {
        let mut m = Metadata::new();
        m.insert("a", 3u32).unwrap();
        m.insert("s", "x").unwrap();
        assert_eq!(m.get_u64("a").unwrap(), 3);
        let e = m.get_str("a").unwrap_err().to_string();
        assert!(e.contains("'a'") && e.contains("UINT32"), "{e}");
        assert!(m.get_u64("nope").unwrap_err().to_string().contains("nope"));
        assert!(m.insert("a", 1u8).is_err());
    }

    #[test]
    fn arrays_check_element_types() {
        let e = Array::new(ValueType::U8, vec![Value::U8(1), Value::I8(2)]).unwrap_err();
        assert!(e.to_string().contains("index 1"), "{e}");
    }
}
