//! Rust element types that map to a [`DType`].

use crate::f8::{F8E4M3Fnuz, F8E5M2Fnuz, F8E4M3, F8E5M2, F8E8M0};
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
    /// True when every bit pattern is a value and the type has no padding, so
    /// on a little-endian target a slice's memory is its little-endian bytes
    /// (bulk conversions then copy memory instead of looping per element).
    const PLAIN: bool = false;
    /// Appends the little-endian bytes of `self`.
    fn write_le(self, out: &mut Vec<u8>);
    /// Reads one value from exactly `DTYPE.size_bytes()` little-endian bytes.
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! le_element {
    ($t:ty, $d:expr) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            const PLAIN: bool = true;
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
le_element!(u16, DType::U16);
le_element!(u32, DType::U32);
le_element!(u64, DType::U64);

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
    if cfg!(target_endian = "little") && T::PLAIN {
        // SAFETY: PLAIN types have no padding bytes, and on a little-endian
        // target their in-memory bytes are their little-endian bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values))
        };
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(values.len() * T::DTYPE.size_bytes());
    for &v in values {
        v.write_le(&mut out);
    }
    out
}

/// Elements from little-endian bytes (the length must be a multiple of the width).
pub fn from_le_bytes<T: Element>(bytes: &[u8]) -> Vec<T> {
    if cfg!(target_endian = "little") && T::PLAIN {
        let n = bytes.len() / std::mem::size_of::<T>();
        let mut out = Vec::<T>::with_capacity(n);
        // SAFETY: the capacity holds n elements; every bit pattern is a valid
        // PLAIN value, and its little-endian bytes are its memory here.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                out.as_mut_ptr() as *mut u8,
                n * std::mem::size_of::<T>(),
            );
            out.set_len(n);
        }
        return out;
    }
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
        DType::U16 => (value as u16).write_le(&mut out),
        DType::U64 => (value as u64).write_le(&mut out),
        DType::F8E4M3 => F8E4M3::from_f64(value).write_le(&mut out),
        DType::F8E5M2 => F8E5M2::from_f64(value).write_le(&mut out),
        DType::F8E8M0 => F8E8M0::from_f64(value).write_le(&mut out),
        DType::F8E4M3Fnuz => F8E4M3Fnuz::from_f64(value).write_le(&mut out),
        DType::F8E5M2Fnuz => F8E5M2Fnuz::from_f64(value).write_le(&mut out),
    }
    out
}

#[cfg(test)]
mod bulk_tests {
    use super::*;

    /// The bulk copies give the same bytes as each element's own `to_le_bytes`.
    #[test]
    fn bulk_conversions_match_per_element_bytes() {
        let f: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.5) * 1e-3).collect();
        let want: Vec<u8> = f.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(to_le_bytes(&f), want);
        assert_eq!(from_le_bytes::<f32>(&want), f);
        let h: Vec<bf16> = f.iter().map(|&v| bf16::from_f32(v)).collect();
        let want: Vec<u8> = h.iter().flat_map(|v| v.to_bits().to_le_bytes()).collect();
        assert_eq!(to_le_bytes(&h), want);
        assert_eq!(from_le_bytes::<bf16>(&want), h);
        let i: Vec<i64> = (-3..4).map(|v| v * 0x0102_0304_0506).collect();
        let want: Vec<u8> = i.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(from_le_bytes::<i64>(&want), i);
        let b = [true, false, true];
        assert_eq!(to_le_bytes(&b), vec![1, 0, 1]);
        assert_eq!(from_le_bytes::<bool>(&[0, 2, 1]), vec![false, true, true]);
    }
}
