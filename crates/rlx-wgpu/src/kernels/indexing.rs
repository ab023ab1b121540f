//! Element-wise indexing along an axis: numpy `take_along_axis` and torch
//! `scatter_add`, with negative indices counted from the end and an index
//! out of range setting the failure flag.

use super::{Kernel, NodeCtx};
use crate::wgsl::coords;
use rlx_ir::DType;

/// Statements reading index `p` of input 1 into `v`, resolved against an
/// axis of length `dim` (a bad one fails the run and reads 0).
fn resolve(p: &str, dim: usize) -> String {
    format!(
        "  var v = x1({p});\n  if (v < 0) {{ v += {dim}; }}\n  if (v < 0 || v >= {dim}) {{ fail(); v = 0; }}\n"
    )
}

/// `sum_k c{k} * strides[k]` with coordinate `axis` replaced by `at`.
fn offset_with(strides: &[usize], axis: usize, at: &str) -> String {
    let terms: Vec<String> = strides
        .iter()
        .enumerate()
        .map(|(k, s)| {
            if k == axis {
                format!("u32({at}) * {s}u")
            } else {
                format!("c{k} * {s}u")
            }
        })
        .collect();
    if terms.is_empty() {
        "0u".into()
    } else {
        terms.join(" + ")
    }
}

/// numpy `take_along_axis(x, idx, axis)`: the output has the index's dims.
pub(super) fn gather_elements(cx: &NodeCtx, axis: usize) -> Kernel {
    let x = &cx.inputs[0];
    let own = rlx_ir::contiguous_strides(&x.dims);
    let pre = resolve("i", x.dims[axis]);
    cx.gather_map(&pre, &offset_with(&own, axis, "v"))
}

/// torch `scatter_add(base, axis, idx, updates)` as the CPU backend runs
/// it: the output starts as `base`; the update paired with index element
/// `p` (row-major over the index's dims) is added at that index's cell.
/// One thread per output cell sums its updates in index order, so the
/// result is deterministic and equal to the sequential one.
pub(super) fn scatter_add(cx: &NodeCtx, axis: usize) -> Result<Kernel, String> {
    let dt = cx.out.dtype;
    if dt == DType::I64 {
        return Err("scatter_add on i64 has no GPU kernel (values compute in 32 bits)".into());
    }
    let (base, idx) = (&cx.inputs[0], &cx.inputs[1]);
    let istrides = rlx_ir::contiguous_strides(&idx.dims);
    // The output cell's coords outside the axis must lie inside the index's dims.
    let inside: Vec<String> = idx
        .dims
        .iter()
        .enumerate()
        .filter(|&(k, _)| k != axis)
        .map(|(k, d)| format!("c{k} < {d}u"))
        .collect();
    let inside = if inside.is_empty() {
        "true".into()
    } else {
        inside.join(" && ")
    };
    let add = if dt == DType::Bool {
        "acc = acc | x2(p);"
    } else {
        "acc = acc + x2(p);"
    };
    let defs = format!(
        "{loads}fn value(i: u32) -> {ty} {{\n{oc}  var acc = x0(i);\n  if (!({inside})) {{ return acc; }}\n  for (var j = 0u; j < {len}u; j++) {{\n    let p = {p};\n  {res}    if (u32(v) == c{axis}) {{ {add} }}\n  }}\n  return acc;\n}}\n",
        loads = cx.loads(),
        ty = cx.out_ty(),
        oc = coords(&base.dims, "i", "c"),
        len = idx.dims[axis],
        p = offset_with(&istrides, axis, "j"),
        res = resolve("p", base.dims[axis]).replace("\n  ", "\n    "),
    );
    Ok(cx.element(defs))
}
