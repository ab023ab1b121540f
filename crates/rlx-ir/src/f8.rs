//! The 8-bit float formats safetensors and PyTorch store: one-byte
//! newtypes ([`F8E4M3`], [`F8E5M2`], [`F8E8M0`], [`F8E4M3Fnuz`],
//! [`F8E5M2Fnuz`]) that convert exactly to `f32` and round from it as
//! PyTorch's `float8_*` types do.
//!
//! | type | torch / ml_dtypes name | bias | inf | NaN | -0 | max finite |
//! |---|---|---|---|---|---|---|
//! | [`F8E4M3`] | `float8_e4m3fn` | 7 | none | `S.1111.111` | yes | 448 |
//! | [`F8E5M2`] | `float8_e5m2` | 15 | `S.11111.00` | `S.11111.xx` | yes | 57344 |
//! | [`F8E4M3Fnuz`] | `float8_e4m3fnuz` | 8 | none | `0x80` | no | 240 |
//! | [`F8E5M2Fnuz`] | `float8_e5m2fnuz` | 16 | none | `0x80` | no | 57344 |
//! | [`F8E8M0`] | `float8_e8m0fnu` | 127 | none | `0xFF` | no sign, no zero | 2^127 |
//!
//! Rounding follows PyTorch (the reference the fixtures come from), which
//! is ml_dtypes' except where noted: to nearest, ties to even, from the
//! `f32` value (an `f64` is first rounded to `f32`, as torch does; ml_dtypes
//! rounds once). Past the largest finite value (or from an infinity)
//! [`F8E5M2`] gives its infinity, the fnuz formats their NaN, and
//! [`F8E4M3`] saturates to +-448 (torch; ml_dtypes gives NaN). A zero keeps
//! its sign where the format has a negative zero. [`F8E8M0`] follows
//! torch's `float8_e8m0fnu`: the sign is dropped, the exponent of the `f32`
//! is rounded on its mantissa's guard / round / sticky bits (ties to even),
//! zero and `f32` subnormals up to 2^-127 become 2^-127 (ml_dtypes: NaN for
//! zero and negatives), infinities and NaN become NaN.
//!
//! ```
//! use rlx_ir::f8::{F8E4M3, F8E8M0};
//! assert_eq!(F8E4M3::from_f32(448.0).to_bits(), 0x7E);
//! assert_eq!(F8E4M3::from_f32(480.0).to_f32(), 448.0);
//! assert_eq!(F8E4M3::from_f32(0.3).to_f32(), 0.3125);
//! assert_eq!(F8E8M0::from_f32(3.0).to_f32(), 4.0);
//! ```

use crate::element::Element;
use crate::DType;

/// How a format spends its special codes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Specials {
    /// IEEE-like: all-ones exponent is inf (mantissa 0) or NaN.
    Ieee,
    /// "fn": no inf; only all-ones exponent and mantissa is NaN.
    Fn,
    /// "fnuz": no inf, no negative zero; `0x80` is the one NaN.
    Fnuz,
}

/// A signed 8-bit float format: 1 sign bit, `EBITS` exponent, `MBITS` mantissa.
struct Format {
    mbits: u32,
    bias: i32,
    specials: Specials,
    /// The largest finite value.
    max: f64,
}

const E4M3: Format = Format {
    mbits: 3,
    bias: 7,
    specials: Specials::Fn,
    max: 448.0,
};
const E5M2: Format = Format {
    mbits: 2,
    bias: 15,
    specials: Specials::Ieee,
    max: 57344.0,
};
const E4M3_FNUZ: Format = Format {
    mbits: 3,
    bias: 8,
    specials: Specials::Fnuz,
    max: 240.0,
};
const E5M2_FNUZ: Format = Format {
    mbits: 2,
    bias: 16,
    specials: Specials::Fnuz,
    max: 57344.0,
};

impl Format {
    fn exp_mask(&self) -> u8 {
        (0x7F >> self.mbits) as u8
    }

    fn decode(&self, b: u8) -> f32 {
        let neg = b & 0x80 != 0;
        let e = (b >> self.mbits) & self.exp_mask();
        let m = b & ((1u8 << self.mbits) - 1);
        match self.specials {
            Specials::Fnuz if b == 0x80 => return f32::NAN,
            Specials::Fn if e == self.exp_mask() && m == (1 << self.mbits) - 1 => {
                return if neg { -f32::NAN } else { f32::NAN }
            }
            Specials::Ieee if e == self.exp_mask() => {
                let v = if m == 0 { f32::INFINITY } else { f32::NAN };
                return if neg { -v } else { v };
            }
            _ => {}
        }
        let mag = if e == 0 {
            f64::from(m) * pow2(1 - self.bias - self.mbits as i32)
        } else {
            (1.0 + f64::from(m) / f64::from(1u32 << self.mbits)) * pow2(i32::from(e) - self.bias)
        };
        // Exact: every value of these formats is an f32.
        let v = mag as f32;
        if neg {
            -v
        } else {
            v
        }
    }

    /// The NaN code for a value of sign `neg`.
    fn nan(&self, neg: bool) -> u8 {
        match self.specials {
            Specials::Fnuz => 0x80,
            // torch keeps the sign of a NaN (0x7F / 0xFF).
            Specials::Fn | Specials::Ieee => 0x7F | sign_bit(neg),
        }
    }

    /// The code past the largest finite value: inf where there is one, the
    /// largest finite value for "fn" (torch saturates), NaN for fnuz.
    fn overflow(&self, neg: bool) -> u8 {
        match self.specials {
            Specials::Ieee => (self.exp_mask() << self.mbits) | sign_bit(neg),
            Specials::Fn => (0x7F - 1) | sign_bit(neg),
            Specials::Fnuz => self.nan(neg),
        }
    }

    fn zero(&self, neg: bool) -> u8 {
        match self.specials {
            Specials::Fnuz => 0,
            _ => sign_bit(neg),
        }
    }

    /// Rounds `x` to nearest, ties to even.
    fn encode(&self, x: f64) -> u8 {
        let neg = x.is_sign_negative();
        if x.is_nan() {
            return self.nan(neg);
        }
        let a = x.abs();
        if a.is_infinite() {
            return self.overflow(neg);
        }
        if a == 0.0 {
            return self.zero(neg);
        }
        let min_exp = 1 - self.bias;
        let e = exponent_of(a).max(min_exp);
        // a / quantum is exact (a power-of-two scaling of a finite f64 that
        // stays normal), so this is one correct rounding.
        let quantum = pow2(e - self.mbits as i32);
        let n = (a / quantum).round_ties_even();
        if n * quantum > self.max {
            return self.overflow(neg);
        }
        if n == 0.0 {
            return self.zero(neg);
        }
        let n = n as u32;
        let one = 1u32 << self.mbits;
        let (field, mant) = if n < one {
            // Subnormal: only reachable at the minimum exponent.
            (0, n)
        } else if n == 2 * one {
            // Rounded up into the next binade.
            (e + 1 + self.bias, 0)
        } else {
            (e + self.bias, n - one)
        };
        ((field as u32) << self.mbits | mant) as u8 | sign_bit(neg)
    }
}

fn sign_bit(neg: bool) -> u8 {
    if neg {
        0x80
    } else {
        0
    }
}

/// 2^e as f64 (exact over the exponents used here).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((1023 + e) as u64) << 52)
}

/// floor(log2(a)) of a positive finite normal f64 (every f32 is one).
fn exponent_of(a: f64) -> i32 {
    if a < f64::MIN_POSITIVE {
        // f64 subnormal: far below every format's range; the caller's
        // rounding then gives zero.
        return -1075;
    }
    ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023
}

macro_rules! signed_f8 {
    ($(#[$doc:meta])* $name:ident, $fmt:expr, $dtype:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The value with these bits.
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits)
            }

            /// The stored bits.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// The exact value.
            pub fn to_f32(self) -> f32 {
                $fmt.decode(self.0)
            }

            /// The exact value as `f64`.
            pub fn to_f64(self) -> f64 {
                f64::from(self.to_f32())
            }

            /// `x` rounded to nearest, ties to even (see the module docs for
            /// overflow and NaN).
            pub fn from_f32(x: f32) -> Self {
                $name($fmt.encode(f64::from(x)))
            }

            /// `x` rounded to `f32`, then as [`Self::from_f32`] (torch's
            /// double rounding).
            pub fn from_f64(x: f64) -> Self {
                Self::from_f32(x as f32)
            }
        }

        impl Element for $name {
            const DTYPE: DType = $dtype;
            const PLAIN: bool = true;
            fn write_le(self, out: &mut Vec<u8>) {
                out.push(self.0);
            }
            fn read_le(bytes: &[u8]) -> Self {
                $name(bytes[0])
            }
        }
    };
}

signed_f8!(
    /// `float8_e4m3fn`: 4 exponent bits (bias 7), 3 mantissa bits, no
    /// infinity, NaN `S.1111.111`, max 448.
    F8E4M3,
    E4M3,
    DType::F8E4M3
);
signed_f8!(
    /// `float8_e5m2`: 5 exponent bits (bias 15), 2 mantissa bits,
    /// IEEE-like infinities and NaNs, max 57344.
    F8E5M2,
    E5M2,
    DType::F8E5M2
);
signed_f8!(
    /// `float8_e4m3fnuz`: 4 exponent bits (bias 8), 3 mantissa bits, no
    /// infinity, no negative zero, NaN `0x80`, max 240.
    F8E4M3Fnuz,
    E4M3_FNUZ,
    DType::F8E4M3Fnuz
);
signed_f8!(
    /// `float8_e5m2fnuz`: 5 exponent bits (bias 16), 2 mantissa bits, no
    /// infinity, no negative zero, NaN `0x80`, max 57344.
    F8E5M2Fnuz,
    E5M2_FNUZ,
    DType::F8E5M2Fnuz
);

/// `float8_e8m0fnu` (the OCP MX scale): the value `2^(bits - 127)`, `0xFF`
/// is NaN; no sign, no zero, no infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct F8E8M0(u8);

impl F8E8M0 {
    /// The value with these bits.
    pub const fn from_bits(bits: u8) -> Self {
        F8E8M0(bits)
    }

    /// The stored bits.
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// The exact value: 2^(bits - 127), or NaN for `0xFF`.
    pub fn to_f32(self) -> f32 {
        if self.0 == 0xFF {
            return f32::NAN;
        }
        // 2^-127 is an f32 subnormal: exact.
        pow2(i32::from(self.0) - 127) as f32
    }

    /// The exact value as `f64`.
    pub fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }

    /// torch's rounding of `x` (see the module docs): the sign is ignored,
    /// the `f32` exponent rounds up when the mantissa's guard bit is set and
    /// the round or sticky bit is set or the exponent is that of a normal.
    pub fn from_f32(x: f32) -> Self {
        let bits = x.to_bits();
        let exponent = (bits >> 23) & 0xFF;
        if exponent == 0xFF {
            return F8E8M0(0xFF);
        }
        let guard = bits & 0x40_0000 != 0;
        let round = bits & 0x20_0000 != 0;
        let sticky = bits & 0x1F_FFFF != 0;
        let lsb = exponent > 0;
        let up = guard && (round || sticky || lsb);
        // exponent <= 254 here, so the increment stays in a byte (254 + 1 is NaN,
        // as in torch).
        F8E8M0((exponent + u32::from(up)) as u8)
    }

    /// `x` rounded to `f32`, then as [`Self::from_f32`] (torch).
    pub fn from_f64(x: f64) -> Self {
        Self::from_f32(x as f32)
    }
}

impl Element for F8E8M0 {
    const DTYPE: DType = DType::F8E8M0;
    const PLAIN: bool = true;
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(self.0);
    }
    fn read_le(bytes: &[u8]) -> Self {
        F8E8M0(bytes[0])
    }
}

/// The exact `f32` value of one stored byte of the 8-bit float `dtype`;
/// `None` when `dtype` is not one.
pub fn decode(dtype: DType, bits: u8) -> Option<f32> {
    Some(match dtype {
        DType::F8E4M3 => F8E4M3(bits).to_f32(),
        DType::F8E5M2 => F8E5M2(bits).to_f32(),
        DType::F8E4M3Fnuz => F8E4M3Fnuz(bits).to_f32(),
        DType::F8E5M2Fnuz => F8E5M2Fnuz(bits).to_f32(),
        DType::F8E8M0 => F8E8M0(bits).to_f32(),
        _ => return None,
    })
}

/// `x` rounded to the 8-bit float `dtype` (its `from_f64`: through `f32`,
/// as torch); `None` when `dtype` is not one.
pub fn encode(dtype: DType, x: f64) -> Option<u8> {
    Some(match dtype {
        DType::F8E4M3 => F8E4M3::from_f64(x).0,
        DType::F8E5M2 => F8E5M2::from_f64(x).0,
        DType::F8E4M3Fnuz => F8E4M3Fnuz::from_f64(x).0,
        DType::F8E5M2Fnuz => F8E5M2Fnuz::from_f64(x).0,
        DType::F8E8M0 => F8E8M0::from_f64(x).0,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte decodes to a value that encodes back to the same byte
    /// (NaNs to the canonical NaN of their sign).
    #[test]
    fn every_code_round_trips() {
        for d in [
            DType::F8E4M3,
            DType::F8E5M2,
            DType::F8E4M3Fnuz,
            DType::F8E5M2Fnuz,
            DType::F8E8M0,
        ] {
            for b in 0..=255u8 {
                let v = decode(d, b).unwrap();
                let back = encode(d, f64::from(v)).unwrap();
                if v.is_nan() {
                    assert!(decode(d, back).unwrap().is_nan(), "{d} {b:#x}");
                } else {
                    assert_eq!(back, b, "{d} {b:#x} = {v}");
                }
            }
        }
    }

    #[test]
    fn format_limits() {
        assert_eq!(F8E4M3::from_bits(0x7E).to_f32(), 448.0);
        assert_eq!(F8E4M3::from_bits(0x01).to_f32(), 2f32.powi(-9));
        assert_eq!(F8E5M2::from_bits(0x7B).to_f32(), 57344.0);
        assert_eq!(F8E5M2::from_bits(0x7C).to_f32(), f32::INFINITY);
        assert_eq!(F8E4M3Fnuz::from_bits(0x7F).to_f32(), 240.0);
        assert_eq!(F8E5M2Fnuz::from_bits(0x01).to_f32(), 2f32.powi(-17));
        assert_eq!(F8E8M0::from_bits(0).to_f32(), 2f32.powi(-127));
        assert_eq!(F8E8M0::from_bits(254).to_f32(), 2f32.powi(127));
        // -0 has no code in fnuz: it is +0.
        assert_eq!(F8E4M3Fnuz::from_f32(-0.0).to_bits(), 0);
        assert_eq!(F8E4M3::from_f32(-0.0).to_bits(), 0x80);
        assert_eq!(F8E4M3::from_f32(f32::NEG_INFINITY).to_bits(), 0xFE);
        assert_eq!(F8E5M2::from_f32(61440.0).to_bits(), 0x7C);
        assert_eq!(F8E5M2Fnuz::from_f32(1e30).to_bits(), 0x80);
    }
}
