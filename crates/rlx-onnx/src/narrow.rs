//! ONNX element types RLX has no dtype for, kept in a wider storage dtype.
//!
//! | ONNX type | storage | meaning of a stored element |
//! |---|---|---|
//! | FLOAT8E4M3FN / E4M3FNUZ / E5M2 / E5M2FNUZ | `U8` | the 8-bit code |
//! | FLOAT4E2M1 | `U8` | the 4-bit code (unpacked) |
//! | FLOAT8E8M0 | `U8` | the exponent code |
//! | INT4 / INT2 | `I8` | the value (unpacked) |
//! | UINT4 / UINT2 | `U8` | the value (unpacked) |
//! | UINT16 | `I32` | the value (arithmetic does not wrap at 16 bits) |
//! | UINT64 | `I64` | the value (values past `i64::MAX` wrap) |
//!
//! Tensors of these types cross the API in their storage dtype. The
//! importer tracks the ONNX type of such values ("narrow" values): Cast,
//! CastLike, QuantizeLinear and DequantizeLinear encode / decode them, data
//! movement passes them through, any other op on them is unsupported.

use crate::proto::tensor_proto::DataType;
use rlx_ir::DType;

/// A floating-point format of 8 or 4 bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiniFloat {
    /// Exponent bits.
    pub exp_bits: u32,
    /// Mantissa bits.
    pub man_bits: u32,
    /// Exponent bias.
    pub bias: i32,
    /// `uz` formats: no negative zero, the only NaN is the sign-only code.
    pub unsigned_zero: bool,
    /// The all-ones exponent encodes infinities (E5M2).
    pub has_inf: bool,
    /// Has NaN codes at all (FP4 has none).
    pub has_nan: bool,
}

impl MiniFloat {
    /// The format of an ONNX element type.
    pub fn of(elem_type: i32) -> Option<MiniFloat> {
        let f = |e, m, bias, uz, inf, nan| MiniFloat {
            exp_bits: e,
            man_bits: m,
            bias,
            unsigned_zero: uz,
            has_inf: inf,
            has_nan: nan,
        };
        Some(match DataType::try_from(elem_type).ok()? {
            DataType::Float8e4m3fn => f(4, 3, 7, false, false, true),
            DataType::Float8e4m3fnuz => f(4, 3, 8, true, false, true),
            DataType::Float8e5m2 => f(5, 2, 15, false, true, true),
            DataType::Float8e5m2fnuz => f(5, 2, 16, true, false, true),
            DataType::Float4e2m1 => f(2, 1, 1, false, false, false),
            _ => return None,
        })
    }

    /// Total bits.
    pub fn bits(self) -> u32 {
        1 + self.exp_bits + self.man_bits
    }

    /// The sign bit.
    pub fn sign_bit(self) -> u32 {
        1 << (self.bits() - 1)
    }

    /// The NaN code written for NaN inputs.
    pub fn nan_code(self) -> u32 {
        if self.unsigned_zero {
            self.sign_bit()
        } else {
            self.sign_bit() - 1
        }
    }

    /// The code a NaN input encodes to, as onnx's reference writes it
    /// (E5M2 keeps float16's quiet-NaN top byte; FP4 has no NaN and gives
    /// the sign code).
    pub fn nan_encoding(self) -> u32 {
        match (self.bits(), self.has_inf, self.has_nan) {
            (4, _, false) => self.sign_bit(),
            (_, true, _) => 0x7E,
            _ => self.nan_code(),
        }
    }

    /// The value of `code`.
    pub fn decode(self, code: u32) -> f32 {
        let sign = if code & self.sign_bit() != 0 {
            -1.0
        } else {
            1.0
        };
        let mag = code & (self.sign_bit() - 1);
        if self.unsigned_zero && code == self.sign_bit() {
            return f32::NAN;
        }
        let e = mag >> self.man_bits;
        let m = mag & ((1 << self.man_bits) - 1);
        let e_max = (1 << self.exp_bits) - 1;
        if self.has_inf && e == e_max {
            return if m == 0 {
                sign * f32::INFINITY
            } else {
                f32::NAN
            };
        }
        if self.has_nan && !self.unsigned_zero && !self.has_inf && mag == self.sign_bit() - 1 {
            return f32::NAN;
        }
        let frac = m as f64 / (1u32 << self.man_bits) as f64;
        let v = if e == 0 {
            frac * 2f64.powi(1 - self.bias)
        } else {
            (1.0 + frac) * 2f64.powi(e as i32 - self.bias)
        };
        sign * v as f32
    }

    /// The largest finite positive code.
    pub fn max_code(self) -> u32 {
        let top = self.sign_bit() - 1;
        if self.has_inf {
            // Below the all-ones exponent.
            (((1 << self.exp_bits) - 1) << self.man_bits) - 1
        } else if self.has_nan && !self.unsigned_zero {
            top - 1
        } else {
            top
        }
    }

    /// Every finite positive value by code `0..=max_code`, increasing.
    pub fn positive_values(self) -> Vec<f64> {
        (0..=self.max_code())
            .map(|c| self.decode(c) as f64)
            .collect()
    }

    /// The value one step above the largest finite value (where
    /// non-saturating rounding overflows).
    pub fn overflow_step(self) -> f64 {
        let v = self.positive_values();
        let n = v.len();
        v[n - 1] + (v[n - 1] - v[n - 2])
    }
}

/// Bits per element of packed integer types (INT4 / UINT4 / INT2 / UINT2),
/// with signedness.
pub fn packed_int(elem_type: i32) -> Option<(u32, bool)> {
    Some(match DataType::try_from(elem_type).ok()? {
        DataType::Int4 => (4, true),
        DataType::Uint4 => (4, false),
        DataType::Int2 => (2, true),
        DataType::Uint2 => (2, false),
        _ => return None,
    })
}

/// FLOAT8E8M0: an exponent-only scale format, `2^(code - 127)`, code 255 NaN.
pub fn is_e8m0(elem_type: i32) -> bool {
    elem_type == DataType::Float8e8m0 as i32
}

/// The value of an E8M0 code.
pub fn e8m0_decode(code: u32) -> f32 {
    if code == 255 {
        f32::NAN
    } else {
        2f64.powi(code as i32 - 127) as f32
    }
}

/// True for ONNX types the importer tracks: narrow ones, and UINT16 /
/// UINT64 (whose storage is a wider signed type).
pub fn is_tracked(elem_type: i32) -> bool {
    is_narrow(elem_type)
        || elem_type == DataType::Uint16 as i32
        || elem_type == DataType::Uint64 as i32
}

/// True for ONNX types whose stored element is not the value in the storage
/// dtype's own sense (mini floats, packed integers): the importer tags them.
pub fn is_narrow(elem_type: i32) -> bool {
    MiniFloat::of(elem_type).is_some() || packed_int(elem_type).is_some() || is_e8m0(elem_type)
}

/// The storage dtype of a narrow / unsigned-wide ONNX type.
pub fn storage_dtype(elem_type: i32) -> Option<DType> {
    if MiniFloat::of(elem_type).is_some() || is_e8m0(elem_type) {
        return Some(DType::U8);
    }
    if let Some((_, signed)) = packed_int(elem_type) {
        return Some(if signed { DType::I8 } else { DType::U8 });
    }
    match DataType::try_from(elem_type).ok()? {
        DataType::Uint16 => Some(DType::I32),
        DataType::Uint64 => Some(DType::I64),
        _ => None,
    }
}

/// Unpacks `n` elements of `bits` each (low bits first) into one byte each,
/// sign-extending when `signed`.
pub fn unpack(bytes: &[u8], n: usize, bits: u32, signed: bool) -> Vec<u8> {
    let per = (8 / bits) as usize;
    let mask = (1u8 << bits) - 1;
    (0..n)
        .map(|i| {
            let v = (bytes[i / per] >> ((i % per) as u32 * bits)) & mask;
            if signed && v & (1 << (bits - 1)) != 0 {
                v | !mask
            } else {
                v
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float8_tables_match_the_formats() {
        let e4 = MiniFloat::of(DataType::Float8e4m3fn as i32).unwrap();
        assert_eq!(e4.decode(0x7E), 448.0);
        assert!(e4.decode(0x7F).is_nan());
        assert_eq!(e4.decode(0x01), 2f32.powi(-9));
        assert_eq!(e4.decode(0xB8), -1.0);
        let e5 = MiniFloat::of(DataType::Float8e5m2 as i32).unwrap();
        assert_eq!(e5.decode(0x7B), 57344.0);
        assert_eq!(e5.decode(0x7C), f32::INFINITY);
        assert_eq!(e5.max_code(), 0x7B);
        let uz = MiniFloat::of(DataType::Float8e4m3fnuz as i32).unwrap();
        assert_eq!(uz.decode(0x7F), 240.0);
        assert!(uz.decode(0x80).is_nan());
        let f4 = MiniFloat::of(DataType::Float4e2m1 as i32).unwrap();
        let v: Vec<f64> = f4.positive_values();
        assert_eq!(v, vec![0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
    }

    #[test]
    fn packed_ints_unpack_low_bits_first() {
        assert_eq!(unpack(&[0xF7], 2, 4, true), vec![7, 0xFF]);
        assert_eq!(unpack(&[0b1110_0100], 4, 2, false), vec![0, 1, 2, 3]);
    }
}
