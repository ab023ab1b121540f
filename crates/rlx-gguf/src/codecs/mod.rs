//! Per-type codecs: [`dequantize`] GGUF tensor bytes to `f32`, and
//! [`quantize`] `f32` values to GGUF bytes.
//!
//! | family | dequantize | quantize |
//! |---|---|---|
//! | F32, F16, BF16, F64 | yes | yes (F16/BF16 round to nearest even, as ggml and numpy) |
//! | Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 | yes | yes (ggml `quantize_row_*_ref`; byte-identical to gguf-py) |
//! | Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K | yes | yes (ggml `quantize_row_*_K_ref`, no importance matrix) |
//! | TQ1_0, TQ2_0, MXFP4 | yes | yes (ggml reference; byte-identical to gguf-py) |
//! | Q1_0 | yes | yes (ggml reference) |
//! | IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, NVFP4 | yes | refused: ggml's i-quant / NVFP4 searches are not ported |
//! | I8, I16, I32, I64 | refused (integers: read them as typed tensors) | refused |
//!
//! Dequantizers use ggml's order of float operations, so their output is
//! bit-identical to ggml's reference and to gguf-py's numpy code.
//!
//! ```
//! use rlx_gguf::{codecs, GgmlType};
//! let x: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
//! let q = codecs::quantize(GgmlType::Q8_0, &x).unwrap();
//! assert_eq!(q.len(), 34);
//! let y = codecs::dequantize(GgmlType::Q8_0, &q, 32).unwrap();
//! assert!(x.iter().zip(&y).all(|(a, b)| (a - b).abs() < 0.07));
//! ```
// The block codecs are index-for-index ports of ggml's C loops; keeping the
// indices makes them checkable against it line by line.
#![allow(clippy::needless_range_loop)]

mod float;
mod fp4;
mod iq;
mod iq_grids;
mod kquants;
mod kquants_quant;
mod legacy;
mod ternary;

use crate::error::{GgufError, Result};
use crate::types::GgmlType;

type BlockDequant = fn(&[u8], &mut [f32]);
type BlockQuant = fn(&[f32], &mut [u8]);

/// Whole-slice codecs for the element types, per-block ones for block types.
enum Codec<F> {
    Slice(F),
    Block(F),
}

fn dequant_codec(ty: GgmlType) -> Result<Codec<BlockDequant>> {
    use GgmlType::*;
    Ok(match ty {
        F32 => Codec::Slice(float::dequant_f32),
        F16 => Codec::Slice(float::dequant_f16),
        BF16 => Codec::Slice(float::dequant_bf16),
        F64 => Codec::Slice(float::dequant_f64),
        Q4_0 => Codec::Block(legacy::dequant_q4_0),
        Q4_1 => Codec::Block(legacy::dequant_q4_1),
        Q5_0 => Codec::Block(legacy::dequant_q5_0),
        Q5_1 => Codec::Block(legacy::dequant_q5_1),
        Q8_0 => Codec::Block(legacy::dequant_q8_0),
        Q8_1 => Codec::Block(legacy::dequant_q8_1),
        Q2_K => Codec::Block(kquants::dequant_q2_k),
        Q3_K => Codec::Block(kquants::dequant_q3_k),
        Q4_K => Codec::Block(kquants::dequant_q4_k),
        Q5_K => Codec::Block(kquants::dequant_q5_k),
        Q6_K => Codec::Block(kquants::dequant_q6_k),
        Q8_K => Codec::Block(kquants::dequant_q8_k),
        IQ2_XXS => Codec::Block(iq::dequant_iq2_xxs),
        IQ2_XS => Codec::Block(iq::dequant_iq2_xs),
        IQ2_S => Codec::Block(iq::dequant_iq2_s),
        IQ3_XXS => Codec::Block(iq::dequant_iq3_xxs),
        IQ3_S => Codec::Block(iq::dequant_iq3_s),
        IQ1_S => Codec::Block(iq::dequant_iq1_s),
        IQ1_M => Codec::Block(iq::dequant_iq1_m),
        IQ4_NL => Codec::Block(iq::dequant_iq4_nl),
        IQ4_XS => Codec::Block(iq::dequant_iq4_xs),
        TQ1_0 => Codec::Block(ternary::dequant_tq1_0),
        TQ2_0 => Codec::Block(ternary::dequant_tq2_0),
        Q1_0 => Codec::Block(ternary::dequant_q1_0),
        MXFP4 => Codec::Block(fp4::dequant_mxfp4),
        NVFP4 => Codec::Block(fp4::dequant_nvfp4),
        I8 | I16 | I32 | I64 => {
            return Err(GgufError::UnsupportedType {
                ty,
                op: "dequantize",
                reason: "integer tensors are not float data; read them with GgufReader::tensor",
            })
        }
    })
}

fn quant_codec(ty: GgmlType) -> Result<Codec<BlockQuant>> {
    use GgmlType::*;
    let refuse = |reason| {
        Err(GgufError::UnsupportedType {
            ty,
            op: "quantize",
            reason,
        })
    };
    Ok(match ty {
        F32 => Codec::Slice(float::quant_f32),
        F16 => Codec::Slice(float::quant_f16),
        BF16 => Codec::Slice(float::quant_bf16),
        F64 => Codec::Slice(float::quant_f64),
        Q4_0 => Codec::Block(legacy::quant_q4_0),
        Q4_1 => Codec::Block(legacy::quant_q4_1),
        Q5_0 => Codec::Block(legacy::quant_q5_0),
        Q5_1 => Codec::Block(legacy::quant_q5_1),
        Q8_0 => Codec::Block(legacy::quant_q8_0),
        Q8_1 => Codec::Block(legacy::quant_q8_1),
        Q2_K => Codec::Block(kquants_quant::quant_q2_k),
        Q3_K => Codec::Block(kquants_quant::quant_q3_k),
        Q4_K => Codec::Block(kquants_quant::quant_q4_k),
        Q5_K => Codec::Block(kquants_quant::quant_q5_k),
        Q6_K => Codec::Block(kquants_quant::quant_q6_k),
        Q8_K => Codec::Block(kquants_quant::quant_q8_k),
        TQ1_0 => Codec::Block(ternary::quant_tq1_0),
        TQ2_0 => Codec::Block(ternary::quant_tq2_0),
        Q1_0 => Codec::Block(ternary::quant_q1_0),
        MXFP4 => Codec::Block(fp4::quant_mxfp4),
        IQ2_XXS | IQ2_XS | IQ2_S | IQ3_XXS | IQ3_S | IQ1_S | IQ1_M => {
            return refuse("ggml's lattice search (and its importance matrix) is not ported; dequantize is supported")
        }
        IQ4_NL | IQ4_XS => {
            return refuse("ggml's non-linear scale search is not ported; dequantize is supported")
        }
        NVFP4 => return refuse("ggml's ue4m3 scale search is not ported; dequantize is supported"),
        I8 | I16 | I32 | I64 => {
            return refuse("integer tensors are stored as is; build them from a HostTensor")
        }
    })
}

/// Whether [`dequantize`] supports `ty`.
pub fn can_dequantize(ty: GgmlType) -> bool {
    dequant_codec(ty).is_ok()
}

/// Whether [`quantize`] supports `ty`.
pub fn can_quantize(ty: GgmlType) -> bool {
    quant_codec(ty).is_ok()
}

fn check_len(ty: GgmlType, n: usize) -> Result<usize> {
    ty.row_bytes(n).ok_or(GgufError::NotBlockMultiple {
        ty,
        n,
        block: ty.block_size(),
    })
}

/// Decodes `n` values of type `ty` from `bytes` (which must be exactly
/// `ty.row_bytes(n)` long).
pub fn dequantize(ty: GgmlType, bytes: &[u8], n: usize) -> Result<Vec<f32>> {
    let codec = dequant_codec(ty)?;
    let expected = check_len(ty, n)?;
    if bytes.len() != expected {
        return Err(GgufError::DataLength {
            what: format!("{n} {ty} values"),
            expected,
            given: bytes.len(),
        });
    }
    let mut out = vec![0f32; n];
    run_dequant(ty, codec, bytes, &mut out);
    Ok(out)
}

/// Decodes `out.len()` values of type `ty` from `bytes` into `out`.
pub fn dequantize_into(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    let codec = dequant_codec(ty)?;
    let expected = check_len(ty, out.len())?;
    if bytes.len() != expected {
        return Err(GgufError::DataLength {
            what: format!("{} {ty} values", out.len()),
            expected,
            given: bytes.len(),
        });
    }
    run_dequant(ty, codec, bytes, out);
    Ok(())
}

fn run_dequant(ty: GgmlType, codec: Codec<BlockDequant>, bytes: &[u8], out: &mut [f32]) {
    match codec {
        Codec::Slice(f) => f(bytes, out),
        Codec::Block(f) => {
            let blocks = bytes.chunks_exact(ty.type_size());
            for (b, y) in blocks.zip(out.chunks_exact_mut(ty.block_size())) {
                f(b, y);
            }
        }
    }
}

/// Encodes `values` as type `ty`; the count must be a whole number of blocks.
pub fn quantize(ty: GgmlType, values: &[f32]) -> Result<Vec<u8>> {
    let codec = quant_codec(ty)?;
    let mut out = vec![0u8; check_len(ty, values.len())?];
    run_quant(ty, codec, values, &mut out);
    Ok(out)
}

/// Encodes `values` as type `ty` into `out` (exactly `ty.row_bytes(n)` long).
pub fn quantize_into(ty: GgmlType, values: &[f32], out: &mut [u8]) -> Result<()> {
    let codec = quant_codec(ty)?;
    let expected = check_len(ty, values.len())?;
    if out.len() != expected {
        return Err(GgufError::DataLength {
            what: format!("output for {} {ty} values", values.len()),
            expected,
            given: out.len(),
        });
    }
    run_quant(ty, codec, values, out);
    Ok(())
}

fn run_quant(ty: GgmlType, codec: Codec<BlockQuant>, values: &[f32], out: &mut [u8]) {
    match codec {
        Codec::Slice(f) => f(values, out),
        Codec::Block(f) => {
            let blocks = values.chunks_exact(ty.block_size());
            for (x, b) in blocks.zip(out.chunks_exact_mut(ty.type_size())) {
                f(x, b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_is_handled_or_refused_by_name() {
        for ty in GgmlType::ALL {
            let n = ty.block_size() * 2;
            let bytes = vec![0u8; ty.row_bytes(n).unwrap()];
            match dequantize(ty, &bytes, n) {
                Ok(v) => assert!(v.iter().all(|x| *x == 0.0 || x.is_finite()), "{ty}"),
                Err(e) => assert!(e.to_string().contains(ty.name()), "{e}"),
            }
            match quantize(ty, &vec![0.5f32; n]) {
                Ok(q) => assert_eq!(q.len(), bytes.len(), "{ty}"),
                Err(e) => assert!(e.to_string().contains(ty.name()), "{e}"),
            }
        }
    }

    #[test]
    fn lengths_are_checked() {
        let e = dequantize(GgmlType::Q4_0, &[0; 18], 31).unwrap_err();
        assert!(matches!(e, GgufError::NotBlockMultiple { .. }), "{e}");
        let e = dequantize(GgmlType::Q4_0, &[0; 17], 32).unwrap_err();
        assert!(matches!(e, GgufError::DataLength { .. }), "{e}");
    }
}
