//! Rust element types that map to a [`DType`].

use crate::DType;
use half::{bf16, f16};
use num_complex::Complex32;

/// A Rust type that is the storage of one [`DType`] element.
///
/// Values cross the API as little-endian bytes; `Element` converts a slice of
/// `T` to and from them.
pub trait Element: Copy + Send + Sync + 'static {
    /// The dtype this type stores.
    const DTYPE: DType;
    /// Appends the little-endian bytes of `self`.
    fn write_le(self, out: &mut Vec<u8>);
    /// Reads one value from exactly `DTYPE.size_bytes()` little-endian bytes.
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! le_element {
    ($t:ty, $d:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            fn write_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("element byte width"))
            }
        }
    };
}

le_element!(f32, DType::F32);
le_element!(f64, DType::F64);
le_element!(f16, DType::F16);
le_element!(bf16, DType::BF16);
le_element!(i8, DType::I8);
le_element!(i16, DType::I16);
le_element!(i32, DType::I32);
le_element!(i64, DType::I64);
le_element!(u8, DType::U8);
le_element!(u32, DType::U32);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(self as u8);
    }
    fn read_le(bytes: &[u8]) -> Self {
        bytes[0] != 0
    }
}

impl Element for Complex32 {
    const DTYPE: DType = DType::C64;
    fn write_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.re.to_le_bytes());
        out.extend_from_slice(&self.im.to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> Self {
        Complex32::new(f32::read_le(&bytes[..4]), f32::read_le(&bytes[4..8]))
    }
}

/// Little-endian bytes of a slice of elements.
pub fn to_le_bytes<T: Element>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * T::DTYPE.size_bytes());
    for &v in values {
        v.write_le(&mut out);
    }
    out
}

/// Elements from little-endian bytes (the length must be a multiple of the width).
pub fn from_le_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(T::DTYPE.size_bytes())
        .map(T::read_le)
        .collect()
}

/// The little-endian bytes of one scalar `value` stored as `dtype`
/// (rounded / truncated as a numpy `astype` would; complex gets a zero
/// imaginary part, bool is `value != 0`).
pub fn scalar_constant_bytes(value: f64, dtype: DType) -> Vec<u8> {
    let mut out = Vec::with_capacity(dtype.size_bytes());
    match dtype {
        DType::F32 => (value as f32).write_le(&mut out),
        DType::F64 => value.write_le(&mut out),
        DType::F16 => f16::from_f64(value).write_le(&mut out),
        DType::BF16 => bf16::from_f64(value).write_le(&mut out),
        DType::I8 => (value as i8).write_le(&mut out),
        DType::I16 => (value as i16).write_le(&mut out),
        DType::I32 => (value as i32).write_le(&mut out),
        DType::I64 => (value as i64).write_le(&mut out),
        DType::U8 => (value as u8).write_le(&mut out),
        DType::U32 => (value as u32).write_le(&mut out),
        DType::Bool => (value != 0.0).write_le(&mut out),
        DType::C64 => Complex32::new(value as f32, 0.0).write_le(&mut out),
    }
    out
}
