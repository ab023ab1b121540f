//! Shape / dtype rules: matrices are the last two axes, every leading axis
//! is a batch axis (the same in every operand), dtypes f32 or f64.

use rlx_ir::custom::CustomOp;
use rlx_ir::{DType, Shape};

fn float(s: &Shape) -> Result<(), String> {
    match s.dtype() {
        DType::F32 | DType::F64 => Ok(()),
        d => Err(format!("needs f32 or f64, given {d}")),
    }
}

fn square(s: &Shape) -> Result<(), String> {
    float(s)?;
    let d = s.dims();
    if d.len() < 2 || d[d.len() - 1] != d[d.len() - 2] {
        return Err(format!("needs square matrices [..., n, n], given {s}"));
    }
    Ok(())
}

/// `[..., n, n] -> [..., n, n]`.
pub(crate) fn same_square(_: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    square(s[0])?;
    Ok(s[0].clone())
}

/// `[..., n, n], [..., n, k] -> [..., n, k]`.
pub(crate) fn system(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    op.attrs.bool_or("lower", false)?;
    op.attrs.bool_or("trans", false)?;
    let (a, b) = (s[0], s[1]);
    square(a)?;
    float(b)?;
    let (ad, bd) = (a.dims(), b.dims());
    let r = ad.len();
    if bd.len() != r || bd[..r - 2] != ad[..r - 2] || bd[r - 2] != ad[r - 2] {
        return Err(format!(
            "needs a [..., n, n] and b [..., n, k] with the same batch dims, given {a} and {b}"
        ));
    }
    if a.dtype() != b.dtype() {
        return Err(format!("a and b must share a dtype, given {a} and {b}"));
    }
    Ok(b.clone())
}

/// `[..., n, n] -> [...]`.
pub(crate) fn batch_scalar(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let which = op.attrs.int_or("output", 0)?;
    if !(0..=1).contains(&which) {
        return Err(format!(
            "output must be 0 (sign) or 1 (log|det|), is {which}"
        ));
    }
    square(s[0])?;
    let d = s[0].dims();
    Ok(Shape::from_dims(d[..d.len() - 2].to_vec(), s[0].dtype()))
}
