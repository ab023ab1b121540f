//! [`detach`]: the value of a positive tensor with no gradient through it
//! (PyTorch's `.detach()`, JAX's `stop_gradient`), for DoRA's weight norm.

use crate::error::{PeftError, Result};
use rlx_ir::{DType, Graph, GraphExt, NodeId};

/// Returns a node equal to `v` whose derivative is zero, so reverse mode
/// sends no gradient into `v`. Exact (bit for bit) for `v = 0` and finite
/// `v >= 2^-100` (f32) / `2^-900` (f64); smaller positive values are rounded
/// to a multiple of `2^-125` / `2^-954`. Negative `v` is not supported.
///
/// The IR has no stop-gradient op; this is built from ops whose derivative
/// is zero almost everywhere (`floor`, `round`), without losing precision:
/// with `e = floor(log2 v)` and `s = 2^(p + 1 - e)` (`p` mantissa bits),
/// `v · s` is an integer below `2^(p + 2)`, so `round(v · s) / s == v`
/// exactly (powers of two scale exactly, and an error of one in `e` still
/// leaves an exact integer). Zero maps to zero.
pub fn detach(g: &mut Graph, v: NodeId) -> Result<NodeId> {
    let dtype = g.shape(v).dtype();
    let (bits, tiny) = match dtype {
        DType::F32 => (24.0, 2f64.powi(-100)),
        DType::F64 => (53.0, 2f64.powi(-900)),
        other => {
            return Err(PeftError::DType {
                what: "detach".into(),
                expected: "f32 or f64".into(),
                given: other.to_string(),
            })
        }
    };
    let safe = g.maximum(v, g.constant(tiny, dtype));
    let ln = g.log(safe);
    let log2 = g.mul(ln, g.constant(std::f64::consts::LOG2_E, dtype));
    let e = g.floor(log2);
    let shift = g.sub(g.constant(bits + 1.0, dtype), e);
    let two = g.graph_mut().scalar(2.0, dtype);
    let scale = g.pow(two, shift);
    let scaled = g.mul(v, scale);
    let integer = g.round(scaled);
    Ok(g.div(integer, scale))
}
