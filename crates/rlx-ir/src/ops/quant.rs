//! Quantized-weight family: `dequantize` (a primitive) and
//! `dequant_matmul` (a composite).
//!
//! - `Op::Dequantize { scheme }`: `U8` block bytes (any dims) -> the `F32`
//!   values they encode, with the node's declared dims `[.., K]`; `K` is a
//!   whole number of blocks and the byte count is `numel / block * block_bytes`.
//! - `Op::DequantMatMul { scheme, n, k }`: `y[.., N] = x[.., K] · Wᵀ`, where
//!   `W` is an `[N, K]` weight stored as `scheme`'s block bytes (a `U8` input
//!   of `N * K / block * block_bytes` elements, any dims), or, with
//!   `scheme: None`, a plain `F32` / `F16` / `BF16` tensor `[N, K]`. Its
//!   decomposition (dequantize / cast, transpose, matmul) is the reference
//!   semantics; a backend's native kernel may quantize the activations per
//!   block as ggml does, and is checked against ggml's math.
//!
//! The codecs that turn block bytes into values live in `rlx-gguf`; here
//! only the byte-length arithmetic of [`QuantScheme`] is needed.

use super::{arity, fmt_dims, InferResult};
use crate::quant::QuantScheme;
use crate::{DType, Dim, Graph, IrError, NodeId, Op, Shape};

/// Static element count of `s`, or why there is none.
fn static_numel(s: &Shape, what: &str) -> Result<usize, String> {
    let dims = s
        .static_dims()
        .ok_or_else(|| format!("{what} {s} must have static dims"))?;
    dims.iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("{what} {s} has more elements than fit in usize"))
}

/// Bytes of `rows` rows of `k` values of `scheme`, or why `k` is invalid.
fn block_bytes(scheme: QuantScheme, rows: usize, k: usize) -> Result<usize, String> {
    let row = scheme.row_bytes(k).ok_or_else(|| {
        format!(
            "K = {k} is not a multiple of {scheme}'s block size {}",
            scheme.block_size()
        )
    })?;
    row.checked_mul(rows)
        .ok_or_else(|| format!("{rows} rows of {k} {scheme} values overflow usize"))
}

/// Checks that `w` holds the bytes of an `[n, k]` `scheme` tensor.
fn check_block_bytes(scheme: QuantScheme, w: &Shape, n: usize, k: usize) -> Result<(), String> {
    let expected = block_bytes(scheme, n, k)?;
    if w.dtype() != DType::U8 {
        return Err(format!(
            "{scheme} weights are raw block bytes (u8), given {w}"
        ));
    }
    let given = static_numel(w, "the weight bytes")?;
    if given != expected {
        return Err(format!(
            "[{n}, {k}] {scheme} weights take {n} * {k}/{} * {} = {expected} bytes, given {given} ({w})",
            scheme.block_size(),
            scheme.gguf_block_bytes()
        ));
    }
    Ok(())
}

pub(crate) fn infer_dequantize(
    scheme: QuantScheme,
    inputs: &[&Shape],
    declared: &Shape,
) -> InferResult {
    arity(inputs, 1, 1)?;
    if declared.dtype() != DType::F32 {
        return Err(format!("dequantize produces f32, declared {declared}"));
    }
    let dims = declared
        .static_dims()
        .ok_or_else(|| format!("dequantize needs static dims, declared {declared}"))?;
    let k = *dims
        .last()
        .ok_or_else(|| "dequantize to a scalar".to_string())?;
    let numel = static_numel(declared, "the declared shape")?;
    let rows = numel.checked_div(k).unwrap_or(0);
    check_block_bytes(scheme, inputs[0], rows, k)?;
    Ok(declared.clone())
}

pub(crate) fn infer_dequant_matmul(
    scheme: Option<QuantScheme>,
    n: usize,
    k: usize,
    inputs: &[&Shape],
) -> InferResult {
    arity(inputs, 2, 2)?;
    let (x, w) = (inputs[0], inputs[1]);
    if n == 0 || k == 0 {
        return Err(format!(
            "the weight must be non-empty, given [N, K] = [{n}, {k}]"
        ));
    }
    if x.dtype() != DType::F32 || x.rank() == 0 {
        return Err(format!("x must be f32 [.., K = {k}], given {x}"));
    }
    let last = &x.dims()[x.rank() - 1];
    if *last != Dim::Static(k) {
        return Err(format!(
            "x {x} must end in K = {k} (the weight is [N, K] = [{n}, {k}])"
        ));
    }
    match scheme {
        Some(s) => check_block_bytes(s, w, n, k)?,
        None => {
            let plain = matches!(w.dtype(), DType::F32 | DType::F16 | DType::BF16);
            if !plain || w.dims() != [Dim::Static(n), Dim::Static(k)] {
                return Err(format!(
                    "an unquantized weight must be f32 / f16 / bf16 [{n}, {k}], given {w}"
                ));
            }
        }
    }
    let mut dims = x.dims().to_vec();
    *dims.last_mut().expect("rank checked") = Dim::Static(n);
    Ok(Shape::from_dims(dims, DType::F32))
}

/// `x · dequantize(W)ᵀ`: dequantize (or widen) `W` to `F32 [N, K]`,
/// transpose, matmul.
pub(crate) fn decompose_dequant_matmul(
    g: &mut Graph,
    inputs: &[NodeId],
    scheme: Option<QuantScheme>,
    n: usize,
    k: usize,
) -> Result<NodeId, IrError> {
    let (x, w) = (inputs[0], inputs[1]);
    let wf = match scheme {
        Some(scheme) => g.try_node(
            Op::Dequantize { scheme },
            &[w],
            Some(Shape::new(&[n, k], DType::F32)),
        )?,
        None if g.shape(w).dtype() == DType::F32 => w,
        None => g.try_node(Op::Cast, &[w], Some(Shape::new(&[n, k], DType::F32)))?,
    };
    let wt = g.try_node(Op::Transpose { perm: vec![1, 0] }, &[wf], None)?;
    g.try_node(Op::MatMul, &[x, wt], None).map_err(|e| {
        IrError::invalid(
            "dequant_matmul",
            format!(
                "decomposition failed for x {}: {e}",
                fmt_dims(g.shape(x).dims())
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q4k_bytes(n: usize, k: usize) -> Shape {
        Shape::new(&[n * k / 256 * 144], DType::U8)
    }

    #[test]
    fn shape_rule_checks_k_and_byte_length() {
        let x = Shape::new(&[3, 512], DType::F32);
        let s = Some(QuantScheme::GgufQ4K);
        let y = infer_dequant_matmul(s, 5, 512, &[&x, &q4k_bytes(5, 512)]).unwrap();
        assert_eq!(y, Shape::new(&[3, 5], DType::F32));

        let e =
            infer_dequant_matmul(s, 5, 300, &[&Shape::new(&[3, 300], DType::F32), &x]).unwrap_err();
        assert!(e.contains("not a multiple of Q4_K's block size 256"), "{e}");

        let short = Shape::new(&[100], DType::U8);
        let e = infer_dequant_matmul(s, 5, 512, &[&x, &short]).unwrap_err();
        assert!(e.contains("1440 bytes, given 100"), "{e}");

        let e = infer_dequant_matmul(s, 5, 256, &[&x, &q4k_bytes(5, 256)]).unwrap_err();
        assert!(e.contains("must end in K = 256"), "{e}");

        let wf = Shape::new(&[5, 512], DType::F16);
        assert!(infer_dequant_matmul(None, 5, 512, &[&x, &wf]).is_ok());
        let e = infer_dequant_matmul(None, 5, 512, &[&x, &q4k_bytes(5, 512)]).unwrap_err();
        assert!(e.contains("f32 / f16 / bf16 [5, 512]"), "{e}");
    }

    #[test]
    fn dequantize_checks_declared_shape() {
        let d = Shape::new(&[2, 64], DType::F32);
        let b = Shape::new(&[2 * 2 * 18], DType::U8);
        assert!(infer_dequantize(QuantScheme::GgufQ4_0, &[&b], &d).is_ok());
        let e = infer_dequantize(
            QuantScheme::GgufQ4_0,
            &[&b],
            &Shape::new(&[2, 48], DType::F32),
        )
        .unwrap_err();
        assert!(e.contains("block size 32"), "{e}");
    }
}
