//! Element types and numpy-style type promotion.

use std::fmt;

/// The element type of a tensor.
///
/// `C64` is numpy's `complex64`: two little-endian `f32` (real, imaginary).
///
/// The *storage* dtypes ([`DType::is_storage_only`]: `U16`, `U64` and the
/// 8-bit floats of [`crate::f8`]) are what files hold: they load, save,
/// convert and `Cast` to / from every other dtype, and no other op computes
/// on them (a backend refuses such a graph naming the op and dtype).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE-754 binary32.
    F32,
    /// IEEE-754 binary16.
    F16,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    BF16,
    /// IEEE-754 binary64.
    F64,
    /// Signed 8-bit integer.
    I8,
    /// Signed 16-bit integer.
    I16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 8-bit integer.
    U8,
    /// Unsigned 32-bit integer.
    U32,
    /// Boolean, one byte per element (0 or 1).
    Bool,
    /// Complex number of two `f32`.
    C64,
    /// Unsigned 16-bit integer (storage only).
    U16,
    /// Unsigned 64-bit integer (storage only).
    U64,
    /// `float8_e4m3fn` ([`crate::f8::F8E4M3`]; storage only).
    F8E4M3,
    /// `float8_e5m2` ([`crate::f8::F8E5M2`]; storage only).
    F8E5M2,
    /// `float8_e8m0fnu` ([`crate::f8::F8E8M0`]; storage only).
    F8E8M0,
    /// `float8_e4m3fnuz` ([`crate::f8::F8E4M3Fnuz`]; storage only).
    F8E4M3Fnuz,
    /// `float8_e5m2fnuz` ([`crate::f8::F8E5M2Fnuz`]; storage only).
    F8E5M2Fnuz,
}

impl DType {
    /// Every dtype, in declaration order (the compute dtypes, then
    /// [`Self::STORAGE`]).
    pub const ALL: [DType; 19] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U32,
        DType::Bool,
        DType::C64,
        DType::U16,
        DType::U64,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F8E8M0,
        DType::F8E4M3Fnuz,
        DType::F8E5M2Fnuz,
    ];

    /// The storage-only dtypes ([`Self::is_storage_only`]).
    pub const STORAGE: [DType; 7] = [
        DType::U16,
        DType::U64,
        DType::F8E4M3,
        DType::F8E5M2,
        DType::F8E8M0,
        DType::F8E4M3Fnuz,
        DType::F8E5M2Fnuz,
    ];

    /// A dtype that is loaded, saved and cast but never computed on: only
    /// leaves (inputs, params, constants) and `Cast` may have it.
    pub const fn is_storage_only(self) -> bool {
        matches!(
            self,
            DType::U16
                | DType::U64
                | DType::F8E4M3
                | DType::F8E5M2
                | DType::F8E8M0
                | DType::F8E4M3Fnuz
                | DType::F8E5M2Fnuz
        )
    }

    /// One of the 8-bit float formats of [`crate::f8`].
    pub const fn is_f8(self) -> bool {
        matches!(
            self,
            DType::F8E4M3 | DType::F8E5M2 | DType::F8E8M0 | DType::F8E4M3Fnuz | DType::F8E5M2Fnuz
        )
    }

    /// Bytes per element.
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::I8
            | DType::U8
            | DType::Bool
            | DType::F8E4M3
            | DType::F8E5M2
            | DType::F8E8M0
            | DType::F8E4M3Fnuz
            | DType::F8E5M2Fnuz => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::C64 | DType::U64 => 8,
        }
    }

    /// Real floating point that ops compute in (F16, BF16, F32, F64); the
    /// 8-bit floats are [`Self::is_f8`].
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Signed or unsigned integer (not Bool).
    pub const fn is_int(self) -> bool {
        matches!(
            self,
            DType::I8
                | DType::I16
                | DType::I32
                | DType::I64
                | DType::U8
                | DType::U16
                | DType::U32
                | DType::U64
        )
    }

    /// Signed integer.
    pub const fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// Complex.
    pub const fn is_complex(self) -> bool {
        matches!(self, DType::C64)
    }

    /// Lower-case name as in numpy / ml_dtypes (`float32`, `int64`, `bool`,
    /// `float8_e4m3fn`, ...).
    pub const fn numpy_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F64 => "float64",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U32 => "uint32",
            DType::Bool => "bool",
            DType::C64 => "complex64",
            DType::U16 => "uint16",
            DType::U64 => "uint64",
            DType::F8E4M3 => "float8_e4m3fn",
            DType::F8E5M2 => "float8_e5m2",
            DType::F8E8M0 => "float8_e8m0fnu",
            DType::F8E4M3Fnuz => "float8_e4m3fnuz",
            DType::F8E5M2Fnuz => "float8_e5m2fnuz",
        }
    }

    /// Short name used by the textual IR (`f32`, `i64`, `bool`, ...).
    pub const fn short_name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F64 => "f64",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::U32 => "u32",
            DType::Bool => "bool",
            DType::C64 => "c64",
            DType::U16 => "u16",
            DType::U64 => "u64",
            DType::F8E4M3 => "f8e4m3",
            DType::F8E5M2 => "f8e5m2",
            DType::F8E8M0 => "f8e8m0",
            DType::F8E4M3Fnuz => "f8e4m3fnuz",
            DType::F8E5M2Fnuz => "f8e5m2fnuz",
        }
    }

    /// Parses a short or numpy name.
    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.short_name() == s || d.numpy_name() == s)
    }

    /// numpy's result type of a binary operation between arrays of `self` and `other`.
    ///
    /// Follows `numpy.promote_types` over the dtypes RLX has; where numpy would
    /// pick a type RLX lacks (`uint32` with a signed type gives `int64`, which
    /// RLX has; `uint64` with a signed type gives `float64`), the numpy
    /// answer is kept. BF16 promotes like JAX: with F16 it gives F32, with
    /// wider floats the wider float. An 8-bit float with another 8-bit
    /// float, F16, BF16 or an integer of up to 16 bits gives F32 (which holds
    /// every 8-bit float exactly), with wider integers or F64 gives F64, with
    /// bool itself.
    pub fn promote(self, other: DType) -> DType {
        use DType::*;
        if self == other {
            return self;
        }
        let (a, b) = (self, other);
        if a == C64 || b == C64 {
            return C64;
        }
        if a == Bool {
            return b;
        }
        if b == Bool {
            return a;
        }
        if a.is_f8() || b.is_f8() {
            let other = if a.is_f8() { b } else { a };
            let wide = other == F64 || (other.is_int() && int_bits(other) > 16);
            return if wide { F64 } else { F32 };
        }
        match (a.is_float(), b.is_float()) {
            (true, true) => {
                if a == F64 || b == F64 {
                    F64
                } else if a == F32 || b == F32 {
                    F32
                } else {
                    // F16 with BF16
                    F32
                }
            }
            (true, false) => promote_float_int(a, b),
            (false, true) => promote_float_int(b, a),
            (false, false) => promote_ints(a, b),
        }
    }
}

fn int_bits(d: DType) -> u32 {
    (d.size_bytes() * 8) as u32
}

fn promote_float_int(f: DType, i: DType) -> DType {
    use DType::*;
    // numpy: float16 with int8/uint8 stays float16; with int16 -> float32; with int32/64 -> float64.
    let bits = int_bits(i);
    match f {
        F64 => F64,
        F32 => {
            if bits <= 16 {
                F32
            } else {
                F64
            }
        }
        F16 | BF16 => {
            if bits <= 8 {
                f
            } else if bits <= 16 {
                F32
            } else {
                F64
            }
        }
        _ => unreachable!("promote_float_int called with non-float"),
    }
}

fn promote_ints(a: DType, b: DType) -> DType {
    use DType::*;
    let (sa, sb) = (a.is_signed_int(), b.is_signed_int());
    if sa == sb {
        return if int_bits(a) >= int_bits(b) { a } else { b };
    }
    let (signed, unsigned) = if sa { (a, b) } else { (b, a) };
    if unsigned == U64 {
        // numpy: no integer holds both.
        return F64;
    }
    // A signed type strictly wider than the unsigned one holds it; otherwise widen.
    if int_bits(signed) > int_bits(unsigned) {
        signed
    } else {
        match int_bits(unsigned) {
            8 => I16,
            16 => I32,
            _ => I64,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

#[cfg(test)]
mod tests {
    use super::DType::*;

    #[test]
    fn promotion_matches_numpy_table() {
        // Values from numpy.promote_types.
        assert_eq!(I8.promote(U8), I16);
        assert_eq!(I32.promote(U32), I64);
        assert_eq!(U8.promote(I32), I32);
        assert_eq!(F16.promote(I8), F16);
        assert_eq!(F16.promote(I16), F32);
        assert_eq!(F32.promote(I32), F64);
        assert_eq!(F32.promote(I16), F32);
        assert_eq!(Bool.promote(I8), I8);
        assert_eq!(F32.promote(F64), F64);
        assert_eq!(C64.promote(F32), C64);
        assert_eq!(I64.promote(F16), F64);
        assert_eq!(U16.promote(I16), I32);
        assert_eq!(U16.promote(U8), U16);
        assert_eq!(U64.promote(I8), F64);
        assert_eq!(U64.promote(U32), U64);
        assert_eq!(U16.promote(F16), F32);
    }

    #[test]
    fn f8_promotes_to_a_float_that_holds_it() {
        assert_eq!(F8E4M3.promote(F8E5M2), F32);
        assert_eq!(F8E8M0.promote(BF16), F32);
        assert_eq!(F16.promote(F8E4M3Fnuz), F32);
        assert_eq!(F8E5M2Fnuz.promote(I32), F64);
        assert_eq!(F8E5M2.promote(Bool), F8E5M2);
        assert_eq!(F8E4M3.promote(F64), F64);
    }

    #[test]
    fn storage_list_matches_the_predicate() {
        let storage: Vec<_> = super::DType::ALL
            .into_iter()
            .filter(|d| d.is_storage_only())
            .collect();
        assert_eq!(storage, super::DType::STORAGE.to_vec());
    }

    #[test]
    fn parse_round_trips() {
        for d in super::DType::ALL {
            assert_eq!(super::DType::parse(d.short_name()), Some(d));
            assert_eq!(super::DType::parse(d.numpy_name()), Some(d));
        }
    }
}
