//! Quantization metadata the IR carries: [`QuantScheme`] (how one tensor's
//! bytes encode its values) and [`QuantMap`] (a graph-level annotation
//! naming the scheme of each quantized param).
//!
//! The block codecs themselves live in `rlx-gguf`; the IR only names the
//! formats, so shape rules can check byte lengths (`Op::DequantMatMul`,
//! `Op::Dequantize`) without depending on any codec.

use std::collections::BTreeMap;
use std::fmt;

/// How a quantized tensor's bytes encode its values.
///
/// Every current variant is a GGUF block format; the ids and block sizes are
/// ggml's. Plain element types (F32, F16, BF16, ...) are dtypes, not schemes.
///
/// ```
/// use rlx_ir::quant::QuantScheme;
/// let scheme = QuantScheme::GgufQ4K;
/// assert!(scheme.is_gguf());
/// assert_eq!(scheme.gguf_block_bytes(), 144);
/// assert_eq!(scheme.block_size(), 256);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantScheme {
    /// GGUF Q4_0: 32 weights in 18 bytes.
    GgufQ4_0,
    /// GGUF Q4_1: 32 weights in 20 bytes.
    GgufQ4_1,
    /// GGUF Q5_0: 32 weights in 22 bytes.
    GgufQ5_0,
    /// GGUF Q5_1: 32 weights in 24 bytes.
    GgufQ5_1,
    /// GGUF Q8_0: 32 weights in 34 bytes.
    GgufQ8_0,
    /// GGUF Q8_1: 32 weights in 36 bytes.
    GgufQ8_1,
    /// GGUF Q2_K: 256 weights in 84 bytes.
    GgufQ2K,
    /// GGUF Q3_K: 256 weights in 110 bytes.
    GgufQ3K,
    /// GGUF Q4_K: 256 weights in 144 bytes.
    GgufQ4K,
    /// GGUF Q5_K: 256 weights in 176 bytes.
    GgufQ5K,
    /// GGUF Q6_K: 256 weights in 210 bytes.
    GgufQ6K,
    /// GGUF Q8_K: 256 weights in 292 bytes.
    GgufQ8K,
    /// GGUF IQ2_XXS: 256 weights in 66 bytes.
    GgufIq2Xxs,
    /// GGUF IQ2_XS: 256 weights in 74 bytes.
    GgufIq2Xs,
    /// GGUF IQ3_XXS: 256 weights in 98 bytes.
    GgufIq3Xxs,
    /// GGUF IQ1_S: 256 weights in 50 bytes.
    GgufIq1S,
    /// GGUF IQ4_NL: 32 weights in 18 bytes.
    GgufIq4Nl,
    /// GGUF IQ3_S: 256 weights in 110 bytes.
    GgufIq3S,
    /// GGUF IQ2_S: 256 weights in 82 bytes.
    GgufIq2S,
    /// GGUF IQ4_XS: 256 weights in 136 bytes.
    GgufIq4Xs,
    /// GGUF IQ1_M: 256 weights in 56 bytes.
    GgufIq1M,
    /// GGUF TQ1_0: 256 weights in 54 bytes.
    GgufTq1_0,
    /// GGUF TQ2_0: 256 weights in 66 bytes.
    GgufTq2_0,
    /// GGUF MXFP4: 32 weights in 17 bytes.
    GgufMxfp4,
    /// GGUF NVFP4: 64 weights in 36 bytes.
    GgufNvfp4,
    /// GGUF Q1_0: 128 weights in 18 bytes.
    GgufQ1_0,
}

/// (scheme, ggml type id, ggml name, block size, block bytes).
const TABLE: [(QuantScheme, u32, &str, usize, usize); 26] = [
    (QuantScheme::GgufQ4_0, 2, "Q4_0", 32, 18),
    (QuantScheme::GgufQ4_1, 3, "Q4_1", 32, 20),
    (QuantScheme::GgufQ5_0, 6, "Q5_0", 32, 22),
    (QuantScheme::GgufQ5_1, 7, "Q5_1", 32, 24),
    (QuantScheme::GgufQ8_0, 8, "Q8_0", 32, 34),
    (QuantScheme::GgufQ8_1, 9, "Q8_1", 32, 36),
    (QuantScheme::GgufQ2K, 10, "Q2_K", 256, 84),
    (QuantScheme::GgufQ3K, 11, "Q3_K", 256, 110),
    (QuantScheme::GgufQ4K, 12, "Q4_K", 256, 144),
    (QuantScheme::GgufQ5K, 13, "Q5_K", 256, 176),
    (QuantScheme::GgufQ6K, 14, "Q6_K", 256, 210),
    (QuantScheme::GgufQ8K, 15, "Q8_K", 256, 292),
    (QuantScheme::GgufIq2Xxs, 16, "IQ2_XXS", 256, 66),
    (QuantScheme::GgufIq2Xs, 17, "IQ2_XS", 256, 74),
    (QuantScheme::GgufIq3Xxs, 18, "IQ3_XXS", 256, 98),
    (QuantScheme::GgufIq1S, 19, "IQ1_S", 256, 50),
    (QuantScheme::GgufIq4Nl, 20, "IQ4_NL", 32, 18),
    (QuantScheme::GgufIq3S, 21, "IQ3_S", 256, 110),
    (QuantScheme::GgufIq2S, 22, "IQ2_S", 256, 82),
    (QuantScheme::GgufIq4Xs, 23, "IQ4_XS", 256, 136),
    (QuantScheme::GgufIq1M, 29, "IQ1_M", 256, 56),
    (QuantScheme::GgufTq1_0, 34, "TQ1_0", 256, 54),
    (QuantScheme::GgufTq2_0, 35, "TQ2_0", 256, 66),
    (QuantScheme::GgufMxfp4, 39, "MXFP4", 32, 17),
    (QuantScheme::GgufNvfp4, 40, "NVFP4", 64, 36),
    (QuantScheme::GgufQ1_0, 41, "Q1_0", 128, 18),
];

impl QuantScheme {
    /// Every scheme.
    pub const ALL: [QuantScheme; 26] = {
        let mut out = [QuantScheme::GgufQ4_0; 26];
        let mut i = 0;
        while i < TABLE.len() {
            out[i] = TABLE[i].0;
            i += 1;
        }
        out
    };

    const fn row(self) -> (QuantScheme, u32, &'static str, usize, usize) {
        // The table is in declaration order, so the discriminant indexes it.
        TABLE[self as usize]
    }

    /// Whether the scheme is a GGUF block format (true for every current variant).
    pub const fn is_gguf(self) -> bool {
        true
    }

    /// Bytes of one GGUF block (`Q4_K`: 144).
    pub const fn gguf_block_bytes(self) -> usize {
        self.row().4
    }

    /// Weights per block (`Q4_K`: 256).
    pub const fn block_size(self) -> usize {
        self.row().3
    }

    /// The ggml type id stored in GGUF tensor infos (`Q4_K`: 12).
    pub const fn gguf_type_id(self) -> u32 {
        self.row().1
    }

    /// The scheme of a ggml type id; `None` for plain types and unknown ids.
    pub fn from_gguf_type_id(id: u32) -> Option<QuantScheme> {
        TABLE.iter().find(|r| r.1 == id).map(|r| r.0)
    }

    /// ggml's name of the format (`"Q4_K"`).
    pub const fn name(self) -> &'static str {
        self.row().2
    }

    /// Parses ggml's name (case-insensitive), e.g. `"q4_k"`.
    pub fn from_name(name: &str) -> Option<QuantScheme> {
        TABLE
            .iter()
            .find(|r| r.2.eq_ignore_ascii_case(name))
            .map(|r| r.0)
    }

    /// Bits per weight (`Q4_K`: 4.5).
    pub fn bits_per_weight(self) -> f64 {
        (self.gguf_block_bytes() * 8) as f64 / self.block_size() as f64
    }

    /// Bytes of one row of `k` weights, or `None` when `k` is not a whole
    /// number of blocks (or the size overflows).
    pub fn row_bytes(self, k: usize) -> Option<usize> {
        if !k.is_multiple_of(self.block_size()) {
            return None;
        }
        (k / self.block_size()).checked_mul(self.gguf_block_bytes())
    }
}

/// A graph-level annotation: the [`QuantScheme`] of each quantized param,
/// by param name.
///
/// A loader that keeps weights quantized (e.g. GGUF blocks set as `U8`
/// params of `Op::DequantMatMul`) records here which scheme each param
/// holds, so tools downstream (exporters, inspectors, converters) can tell
/// raw block bytes from ordinary `U8` data without parsing the ops. The map
/// is metadata only: the ops carry the scheme they compute with, and a
/// mismatch between the two is the annotator's bug, not a verify error.
///
/// ```
/// use rlx_ir::quant::{QuantMap, QuantScheme};
/// let mut map = QuantMap::new();
/// map.insert("blk.0.attn_q.weight", QuantScheme::GgufQ4K);
/// assert_eq!(map.get("blk.0.attn_q.weight"), Some(QuantScheme::GgufQ4K));
/// assert_eq!(map.get("output_norm.weight"), None);
/// assert_eq!(map.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuantMap {
    schemes: BTreeMap<String, QuantScheme>,
}

impl QuantMap {
    /// An empty map.
    pub fn new() -> QuantMap {
        QuantMap::default()
    }

    /// Records `scheme` for the param `name`; returns the scheme it replaces.
    pub fn insert(&mut self, name: impl Into<String>, scheme: QuantScheme) -> Option<QuantScheme> {
        self.schemes.insert(name.into(), scheme)
    }

    /// The scheme of the param `name`, if it is quantized.
    pub fn get(&self, name: &str) -> Option<QuantScheme> {
        self.schemes.get(name).copied()
    }

    /// Forgets the param `name`; returns its scheme.
    pub fn remove(&mut self, name: &str) -> Option<QuantScheme> {
        self.schemes.remove(name)
    }

    /// Number of quantized params.
    pub fn len(&self) -> usize {
        self.schemes.len()
    }

    /// True when no param is quantized.
    pub fn is_empty(&self) -> bool {
        self.schemes.is_empty()
    }

    /// (param name, scheme) pairs in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, QuantScheme)> {
        self.schemes.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

impl<S: Into<String>> FromIterator<(S, QuantScheme)> for QuantMap {
    fn from_iter<I: IntoIterator<Item = (S, QuantScheme)>>(iter: I) -> QuantMap {
        let mut map = QuantMap::new();
        for (name, scheme) in iter {
            map.insert(name, scheme);
        }
        map
    }
}

impl fmt::Display for QuantScheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_declaration_order() {
        for (i, row) in TABLE.iter().enumerate() {
            assert_eq!(row.0 as usize, i, "{}", row.2);
            assert_eq!(QuantScheme::from_gguf_type_id(row.1), Some(row.0));
            assert_eq!(QuantScheme::from_name(row.2), Some(row.0));
        }
        assert_eq!(QuantScheme::GgufQ4K.bits_per_weight(), 4.5);
        assert_eq!(QuantScheme::GgufQ4K.row_bytes(512), Some(288));
        assert_eq!(QuantScheme::GgufQ4K.row_bytes(300), None);
    }

    #[test]
    fn quant_map_collects_and_iterates_in_name_order() {
        let map: QuantMap = [("b", QuantScheme::GgufQ8_0), ("a", QuantScheme::GgufQ6K)]
            .into_iter()
            .collect();
        let pairs: Vec<_> = map.iter().collect();
        assert_eq!(
            pairs,
            vec![("a", QuantScheme::GgufQ6K), ("b", QuantScheme::GgufQ8_0)]
        );
    }
}
