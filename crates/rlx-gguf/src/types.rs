//! [`GgmlType`]: the tensor element / block types a GGUF tensor can have.

use rlx_ir::quant::QuantScheme;
use rlx_ir::DType;
use std::fmt;

/// A ggml tensor type, as stored in a GGUF tensor info (`ggml_type`).
///
/// Variant names are ggml's (`Q4_K`, `IQ2_XXS`, ...) so they read like the
/// llama.cpp sources and the gguf-py constants. The discriminant is the id
/// stored in the file.
///
/// ```
/// use rlx_gguf::GgmlType;
/// let t = GgmlType::from_id(12).unwrap();
/// assert_eq!(t, GgmlType::Q4_K);
/// assert_eq!((t.block_size(), t.type_size()), (256, 144));
/// assert_eq!(t.row_bytes(512), Some(288));
/// ```
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum GgmlType {
    /// IEEE-754 binary32.
    F32 = 0,
    /// IEEE-754 binary16.
    F16 = 1,
    /// 32 weights: f16 scale + 4-bit quants (offset 8).
    Q4_0 = 2,
    /// 32 weights: f16 scale + f16 min + 4-bit quants.
    Q4_1 = 3,
    /// 32 weights: f16 scale + 5-bit quants (offset 16).
    Q5_0 = 6,
    /// 32 weights: f16 scale + f16 min + 5-bit quants.
    Q5_1 = 7,
    /// 32 weights: f16 scale + 8-bit quants.
    Q8_0 = 8,
    /// 32 weights: f16 scale + f16 (scale * sum) + 8-bit quants.
    Q8_1 = 9,
    /// 256-weight super-block, 2-bit quants with 4-bit scales and mins.
    Q2_K = 10,
    /// 256-weight super-block, 3-bit quants with 6-bit scales.
    Q3_K = 11,
    /// 256-weight super-block, 4-bit quants with 6-bit scales and mins.
    Q4_K = 12,
    /// 256-weight super-block, 5-bit quants with 6-bit scales and mins.
    Q5_K = 13,
    /// 256-weight super-block, 6-bit quants with 8-bit scales.
    Q6_K = 14,
    /// 256-weight super-block, f32 scale + 8-bit quants + 16 block sums.
    Q8_K = 15,
    /// 2.06 bpw lattice quants.
    IQ2_XXS = 16,
    /// 2.31 bpw lattice quants.
    IQ2_XS = 17,
    /// 3.06 bpw lattice quants.
    IQ3_XXS = 18,
    /// 1.56 bpw lattice quants.
    IQ1_S = 19,
    /// 32 weights: f16 scale + 4-bit non-linear quants.
    IQ4_NL = 20,
    /// 3.44 bpw lattice quants.
    IQ3_S = 21,
    /// 2.5 bpw lattice quants.
    IQ2_S = 22,
    /// 256-weight super-block of 4-bit non-linear quants with 6-bit scales.
    IQ4_XS = 23,
    /// Signed 8-bit integer.
    I8 = 24,
    /// Signed 16-bit integer.
    I16 = 25,
    /// Signed 32-bit integer.
    I32 = 26,
    /// Signed 64-bit integer.
    I64 = 27,
    /// IEEE-754 binary64.
    F64 = 28,
    /// 1.75 bpw lattice quants.
    IQ1_M = 29,
    /// bfloat16.
    BF16 = 30,
    /// Ternary, 1.69 bpw (base-3 packing).
    TQ1_0 = 34,
    /// Ternary, 2.06 bpw (2-bit packing).
    TQ2_0 = 35,
    /// OCP microscaling FP4 (e2m1) with an e8m0 scale per 32 weights.
    MXFP4 = 39,
    /// NVIDIA FP4 (e2m1) with a ue4m3 scale per 16 weights.
    NVFP4 = 40,
    /// 1-bit signs with an f16 scale per 128 weights.
    Q1_0 = 41,
}

/// Type ids ggml used once and has removed; a file holding one is refused
/// with the old name, so the user knows to re-convert it.
const REMOVED: &[(u32, &str)] = &[
    (4, "Q4_2"),
    (5, "Q4_3"),
    (31, "Q4_0_4_4"),
    (32, "Q4_0_4_8"),
    (33, "Q4_0_8_8"),
    (36, "IQ4_NL_4_4"),
    (37, "IQ4_NL_4_8"),
    (38, "IQ4_NL_8_8"),
];

impl GgmlType {
    /// Every type this crate knows, in id order.
    pub const ALL: [GgmlType; 34] = [
        GgmlType::F32,
        GgmlType::F16,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q5_0,
        GgmlType::Q5_1,
        GgmlType::Q8_0,
        GgmlType::Q8_1,
        GgmlType::Q2_K,
        GgmlType::Q3_K,
        GgmlType::Q4_K,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q8_K,
        GgmlType::IQ2_XXS,
        GgmlType::IQ2_XS,
        GgmlType::IQ3_XXS,
        GgmlType::IQ1_S,
        GgmlType::IQ4_NL,
        GgmlType::IQ3_S,
        GgmlType::IQ2_S,
        GgmlType::IQ4_XS,
        GgmlType::I8,
        GgmlType::I16,
        GgmlType::I32,
        GgmlType::I64,
        GgmlType::F64,
        GgmlType::IQ1_M,
        GgmlType::BF16,
        GgmlType::TQ1_0,
        GgmlType::TQ2_0,
        GgmlType::MXFP4,
        GgmlType::NVFP4,
        GgmlType::Q1_0,
    ];

    /// The type with file id `id`, or `None` for an unknown or removed id.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        GgmlType::ALL.into_iter().find(|t| t.id() == id)
    }

    /// The name ggml gave a type id it has since removed (`31` -> `Q4_0_4_4`).
    pub fn removed_name(id: u32) -> Option<&'static str> {
        REMOVED.iter().find(|(i, _)| *i == id).map(|(_, n)| *n)
    }

    /// The id stored in the file.
    pub const fn id(self) -> u32 {
        self as u32
    }

    /// ggml's name (`"Q4_K"`, `"BF16"`, ...).
    pub const fn name(self) -> &'static str {
        use GgmlType::*;
        match self {
            F32 => "F32",
            F16 => "F16",
            Q4_0 => "Q4_0",
            Q4_1 => "Q4_1",
            Q5_0 => "Q5_0",
            Q5_1 => "Q5_1",
            Q8_0 => "Q8_0",
            Q8_1 => "Q8_1",
            Q2_K => "Q2_K",
            Q3_K => "Q3_K",
            Q4_K => "Q4_K",
            Q5_K => "Q5_K",
            Q6_K => "Q6_K",
            Q8_K => "Q8_K",
            IQ2_XXS => "IQ2_XXS",
            IQ2_XS => "IQ2_XS",
            IQ3_XXS => "IQ3_XXS",
            IQ1_S => "IQ1_S",
            IQ4_NL => "IQ4_NL",
            IQ3_S => "IQ3_S",
            IQ2_S => "IQ2_S",
            IQ4_XS => "IQ4_XS",
            I8 => "I8",
            I16 => "I16",
            I32 => "I32",
            I64 => "I64",
            F64 => "F64",
            IQ1_M => "IQ1_M",
            BF16 => "BF16",
            TQ1_0 => "TQ1_0",
            TQ2_0 => "TQ2_0",
            MXFP4 => "MXFP4",
            NVFP4 => "NVFP4",
            Q1_0 => "Q1_0",
        }
    }

    /// Parses ggml's name (case-insensitive).
    pub fn from_name(name: &str) -> Option<GgmlType> {
        GgmlType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
    }

    /// Elements per block (1 for plain element types).
    pub const fn block_size(self) -> usize {
        use GgmlType::*;
        match self {
            F32 | F16 | BF16 | F64 | I8 | I16 | I32 | I64 => 1,
            Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0 | Q8_1 | IQ4_NL | MXFP4 => 32,
            NVFP4 => 64,
            Q1_0 => 128,
            Q2_K | Q3_K | Q4_K | Q5_K | Q6_K | Q8_K | IQ2_XXS | IQ2_XS | IQ3_XXS | IQ1_S
            | IQ3_S | IQ2_S | IQ4_XS | IQ1_M | TQ1_0 | TQ2_0 => 256,
        }
    }

    /// Bytes per block (ggml's `type_size`).
    ///
    /// Q8_1 is 36 bytes (two f16 + 32 quants) as in ggml; gguf-py's table
    /// still lists the obsolete 40.
    pub const fn type_size(self) -> usize {
        use GgmlType::*;
        match self {
            F32 => 4,
            F16 | BF16 => 2,
            F64 => 8,
            I8 => 1,
            I16 => 2,
            I32 => 4,
            I64 => 8,
            Q4_0 => 18,
            Q4_1 => 20,
            Q5_0 => 22,
            Q5_1 => 24,
            Q8_0 => 34,
            Q8_1 => 36,
            Q2_K => 84,
            Q3_K => 110,
            Q4_K => 144,
            Q5_K => 176,
            Q6_K => 210,
            Q8_K => 292,
            IQ2_XXS => 66,
            IQ2_XS => 74,
            IQ3_XXS => 98,
            IQ1_S => 50,
            IQ4_NL => 18,
            IQ3_S => 110,
            IQ2_S => 82,
            IQ4_XS => 136,
            IQ1_M => 56,
            TQ1_0 => 54,
            TQ2_0 => 66,
            MXFP4 => 17,
            NVFP4 => 36,
            Q1_0 => 18,
        }
    }

    /// Whether values are stored in blocks with shared scales (anything but
    /// the plain float and integer types).
    pub const fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// The plain [`DType`] of an unquantized type (`F32`, `F16`, `BF16`,
    /// `F64`, `I8`, `I16`, `I32`, `I64`); `None` for block types.
    pub const fn dtype(self) -> Option<DType> {
        use GgmlType::*;
        Some(match self {
            F32 => DType::F32,
            F16 => DType::F16,
            BF16 => DType::BF16,
            F64 => DType::F64,
            I8 => DType::I8,
            I16 => DType::I16,
            I32 => DType::I32,
            I64 => DType::I64,
            _ => return None,
        })
    }

    /// The GGUF type that stores a [`DType`] as is, if there is one.
    pub const fn from_dtype(dtype: DType) -> Option<GgmlType> {
        Some(match dtype {
            DType::F32 => GgmlType::F32,
            DType::F16 => GgmlType::F16,
            DType::BF16 => GgmlType::BF16,
            DType::F64 => GgmlType::F64,
            DType::I8 => GgmlType::I8,
            DType::I16 => GgmlType::I16,
            DType::I32 => GgmlType::I32,
            DType::I64 => GgmlType::I64,
            _ => return None,
        })
    }

    /// The IR quantization scheme of a block type; `None` for plain types.
    pub fn quant_scheme(self) -> Option<QuantScheme> {
        QuantScheme::from_gguf_type_id(self.id())
    }

    /// Bytes of `n` elements, or `None` when `n` is not a whole number of
    /// blocks or the size overflows.
    pub const fn row_bytes(self, n: usize) -> Option<usize> {
        let blocks = n / self.block_size();
        if blocks * self.block_size() != n {
            return None;
        }
        blocks.checked_mul(self.type_size())
    }

    /// Bits per weight (`type_size * 8 / block_size`).
    pub fn bits_per_weight(self) -> f64 {
        (self.type_size() * 8) as f64 / self.block_size() as f64
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<QuantScheme> for GgmlType {
    fn from(s: QuantScheme) -> GgmlType {
        GgmlType::from_id(s.gguf_type_id()).expect("every QuantScheme maps to a GGUF type id")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        for t in GgmlType::ALL {
            assert_eq!(GgmlType::from_id(t.id()), Some(t));
            assert_eq!(GgmlType::from_name(t.name()), Some(t));
        }
        for (id, _) in REMOVED {
            assert_eq!(GgmlType::from_id(*id), None);
        }
    }

    #[test]
    fn every_block_type_has_a_scheme() {
        for t in GgmlType::ALL {
            assert_eq!(t.quant_scheme().is_some(), t.is_quantized(), "{t}");
            if let Some(s) = t.quant_scheme() {
                assert_eq!(GgmlType::from(s), t);
                assert_eq!(s.gguf_block_bytes(), t.type_size());
                assert_eq!(s.block_size(), t.block_size());
            }
        }
    }
}
