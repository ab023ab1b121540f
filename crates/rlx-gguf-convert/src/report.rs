//! [`ConvertReport`]: what a conversion did to each tensor, with sizes and
//! the cosine between the source and its dequantized copy.

use rlx_gguf::GgmlType;
use std::fmt;

/// Which rule chose a tensor's requested type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The converter's default type.
    Default,
    /// An exact-name override.
    Exact,
    /// A glob override (the pattern).
    Pattern(String),
    /// A predicate override (its index, in the order added).
    Predicate(usize),
    /// Kept F32 because it has fewer than two dims.
    OneDimensional,
    /// An integer tensor, stored as it is.
    Integer,
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::Default => f.write_str("default"),
            Choice::Exact => f.write_str("name"),
            Choice::Pattern(p) => write!(f, "glob {p}"),
            Choice::Predicate(i) => write!(f, "rule {i}"),
            Choice::OneDimensional => f.write_str("1-D"),
            Choice::Integer => f.write_str("integer"),
        }
    }
}

/// One tensor of a conversion.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorReport {
    /// The tensor name (as in the source and the output).
    pub name: String,
    /// Row-major shape (the GGUF `ne` order is its reverse).
    pub shape: Vec<usize>,
    /// The source element type (`F32`, `F16`, `BF16`, `I64`, ...).
    pub source_dtype: String,
    /// The type the rules asked for.
    pub requested: GgmlType,
    /// The rule that asked for it.
    pub choice: Choice,
    /// The type written (the fallback type when `fell_back`).
    pub ty: GgmlType,
    /// Whether `requested` was a block type the rows do not fill, so the
    /// tensor was written as the fallback type instead.
    pub fell_back: bool,
    /// Bytes of the source data.
    pub bytes_before: u64,
    /// Bytes of the written tensor data (without alignment padding).
    pub bytes_after: u64,
    /// Cosine similarity (in f64) between the source values (as f32) and
    /// the dequantized output; 1 for two zero vectors, 0 if only one is.
    pub cosine: f64,
}

/// The result of a conversion, per tensor and in total. `Display` prints
/// it as a table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConvertReport {
    /// Every tensor in output order.
    pub tensors: Vec<TensorReport>,
    /// Size of the written file, when a file was written.
    pub file_bytes: Option<u64>,
}

impl ConvertReport {
    /// Total source bytes.
    pub fn bytes_before(&self) -> u64 {
        self.tensors.iter().map(|t| t.bytes_before).sum()
    }

    /// Total output tensor bytes (without padding).
    pub fn bytes_after(&self) -> u64 {
        self.tensors.iter().map(|t| t.bytes_after).sum()
    }

    /// `bytes_before / bytes_after` (0 when nothing was written).
    pub fn compression_ratio(&self) -> f64 {
        match self.bytes_after() {
            0 => 0.0,
            after => self.bytes_before() as f64 / after as f64,
        }
    }

    /// The tensors that fell back to the fallback type.
    pub fn fallbacks(&self) -> impl Iterator<Item = &TensorReport> {
        self.tensors.iter().filter(|t| t.fell_back)
    }

    /// The smallest cosine over all tensors (1 with no tensors).
    pub fn min_cosine(&self) -> f64 {
        self.tensors.iter().map(|t| t.cosine).fold(1.0, f64::min)
    }

    /// The report of the tensor `name`.
    pub fn tensor(&self, name: &str) -> Option<&TensorReport> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

impl fmt::Display for ConvertReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape = |s: &[usize]| {
            let dims: Vec<String> = s.iter().map(|d| d.to_string()).collect();
            format!("[{}]", dims.join(", "))
        };
        let w = self
            .tensors
            .iter()
            .map(|t| t.name.len())
            .chain([6])
            .max()
            .unwrap_or(6);
        writeln!(
            f,
            "{:<w$}  {:<14} {:>6} {:>6}  {:<18} {:>12} {:>12} {:>10}",
            "tensor",
            "shape",
            "source",
            "type",
            "chosen by",
            "bytes before",
            "bytes after",
            "cosine"
        )?;
        for t in &self.tensors {
            let chosen = if t.fell_back {
                format!("fallback from {}", t.requested)
            } else {
                t.choice.to_string()
            };
            writeln!(
                f,
                "{:<w$}  {:<14} {:>6} {:>6}  {:<18} {:>12} {:>12} {:>10.6}",
                t.name,
                shape(&t.shape),
                t.source_dtype,
                t.ty.name(),
                chosen,
                t.bytes_before,
                t.bytes_after,
                t.cosine
            )?;
        }
        writeln!(
            f,
            "total: {} tensors, {} -> {} bytes, compression {:.3}x, min cosine {:.6}, {} fallback(s)",
            self.tensors.len(),
            self.bytes_before(),
            self.bytes_after(),
            self.compression_ratio(),
            self.min_cosine(),
            self.fallbacks().count()
        )?;
        if let Some(n) = self.file_bytes {
            writeln!(f, "file: {n} bytes")?;
        }
        Ok(())
    }
}
