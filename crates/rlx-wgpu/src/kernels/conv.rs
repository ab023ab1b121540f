//! Convolution and pooling over the spatial dims of `[N, C, *sp]` values:
//! one thread per output element walks its window directly (no im2col
//! buffer), so every kernel still reads and writes only the arena.

use super::{is_float, Kernel, NodeCtx};
use crate::wgsl::coords;
use rlx_ir::op::{PoolKind, Window};
use rlx_ir::DType;
use std::fmt::Write;

/// Statements that set `inb` (every spatial tap coordinate inside the
/// input) and `at` (the tap's offset inside one `[*sp_in]` plane), for the
/// output's spatial coords `c2..` and the kernel coords `k0..`; with
/// `padded_end`, also `inpad` (inside the padded input: PyTorch's
/// `count_include_pad` divisor).
fn tap(sp_in: &[usize], w: &Window, padded_end: bool) -> String {
    let strides = rlx_ir::contiguous_strides(sp_in);
    let mut s =
        String::from("      var inb = true;\n      var inpad = true;\n      var at = 0u;\n");
    for (ax, (&len, &st)) in sp_in.iter().zip(&strides).enumerate() {
        let (lo, hi) = w.padding[ax];
        let _ = writeln!(
            s,
            "      let p{ax} = i32(c{} * {}u + k{ax} * {}u) - {lo};\n      inb = inb && p{ax} >= 0 && p{ax} < {len};\n      at += u32(max(p{ax}, 0)) * {st}u;",
            ax + 2,
            w.stride[ax],
            w.dilation[ax],
        );
        if padded_end {
            let _ = writeln!(s, "      inpad = inpad && p{ax} < {};", len + hi);
        }
    }
    s
}

/// The dims of `x [N, C, *sp]` and a weight `w [_, _, *k]` of the same
/// rank: (C, the spatial plane size, the kernel dims, their product), or
/// why `name` has no kernel for them.
fn conv_operands<'a>(
    cx: &'a NodeCtx,
    name: &str,
) -> Result<(usize, usize, &'a [usize], usize), String> {
    let (x, wt) = (&cx.inputs[0], &cx.inputs[1]);
    if !is_float(cx.out.dtype) {
        return Err(format!("{name} on {} has no GPU kernel", cx.out.dtype));
    }
    if x.dims.len() < 3 || wt.dims.len() != x.dims.len() {
        return Err(format!("{name} of {:?} by {:?}", x.dims, wt.dims));
    }
    let kdims = &wt.dims[2..];
    Ok((
        x.dims[1],
        x.dims[2..].iter().product(),
        kdims,
        kdims.iter().product(),
    ))
}

/// The kernel of a (transposed) convolution: each output `[n, o, *sp]`
/// sums `x[n, ci, tap] * w[wb + ci * w_ci + r]` over the `cpg` input
/// channels of its group (`grp`) and the taps `r` that `tap` finds inside
/// the input, plus the bias; in f32.
fn window_sum(
    cx: &NodeCtx,
    (cpg, opg): (usize, usize),
    wb: &str,
    w_ci: usize,
    tap: &str,
) -> Kernel {
    let (c, pin, kdims, taps) = conv_operands(cx, "conv").expect("checked by the caller");
    let bias = if cx.inputs.len() > 2 { "x2(c1)" } else { "0.0" };
    let defs = format!(
        "{loads}fn value(i: u32) -> f32 {{\n{oc}  let grp = c1 / {opg}u;\n  let xb = c0 * {xn}u + grp * {cpg}u * {pin}u;\n  let wb = {wb};\n  var acc = 0.0;\n  for (var ci = 0u; ci < {cpg}u; ci++) {{\n    for (var r = 0u; r < {taps}u; r++) {{\n{kc}{tap}      if (inb) {{ acc += x0(xb + ci * {pin}u + at) * x1(wb + ci * {w_ci}u + r); }}\n    }}\n  }}\n  return acc + {bias};\n}}\n",
        loads = cx.loads(),
        oc = coords(&cx.out.dims, "i", "c"),
        xn = c * pin,
        kc = coords(kdims, "r", "k").replace("  let", "      let"),
    );
    cx.element(defs)
}

/// `x [N, C, *sp]`, `w [O, C / groups, *k] [, bias [O]]`: direct
/// convolution (stride, padding, dilation, groups; depthwise is
/// `groups == C`), accumulated in f32.
pub(super) fn conv(cx: &NodeCtx, w: &Window, groups: usize) -> Result<Kernel, String> {
    let (c, _, kdims, taps) = conv_operands(cx, "conv")?;
    if groups == 0 {
        return Err("conv in 0 groups".into());
    }
    let (cpg, opg) = (c / groups, cx.inputs[1].dims[0] / groups);
    let window = Window {
        kernel: kdims.to_vec(),
        ..w.clone()
    };
    let tap = tap(&cx.inputs[0].dims[2..], &window, false);
    let wb = format!("c1 * {}u", cpg * taps);
    Ok(window_sum(cx, (cpg, opg), &wb, taps, &tap))
}

/// Statements that set `inb` (the output position `c2..` is reached from
/// an input cell by kernel tap `k0..`) and `at` (that cell's offset inside
/// one `[*sp_in]` plane) for a transposed convolution, whose input cell `q`
/// scatters to output `q * stride + k * dilation - pad_lo`.
fn transposed_tap(sp_in: &[usize], w: &Window) -> String {
    let strides = rlx_ir::contiguous_strides(sp_in);
    let mut s = String::from("      var inb = true;\n      var at = 0u;\n");
    for (ax, (&len, &st)) in sp_in.iter().zip(&strides).enumerate() {
        let (lo, stride) = (w.padding[ax].0, w.stride[ax]);
        let _ = writeln!(
            s,
            "      let t{ax} = i32(c{}) + {lo} - i32(k{ax} * {}u);\n      let q{ax} = max(t{ax}, 0) / {stride};\n      inb = inb && t{ax} >= 0 && t{ax} % {stride} == 0 && q{ax} < {len};\n      at += u32(q{ax}) * {st}u;",
            ax + 2,
            w.dilation[ax],
        );
    }
    s
}

/// `x [N, C, *sp]`, `w [C, O / groups, *k] [, bias [O]]`: transposed
/// convolution (stride, padding, output padding, dilation, groups), one
/// thread per output element gathering the input cells that scatter to
/// it, accumulated in f32 (the output's size carries the output padding).
pub(super) fn conv_transpose(cx: &NodeCtx, w: &Window, groups: usize) -> Result<Kernel, String> {
    let (c, _, _, taps) = conv_operands(cx, "conv_transpose")?;
    if groups == 0 {
        return Err("conv_transpose in 0 groups".into());
    }
    let (cpg, opg) = (c / groups, cx.inputs[1].dims[1]);
    let tap = transposed_tap(&cx.inputs[0].dims[2..], w);
    let wb = format!("grp * {}u + (c1 % {opg}u) * {taps}u", cpg * opg * taps);
    Ok(window_sum(cx, (cpg, opg), &wb, opg * taps, &tap))
}

/// Max / average pooling of `x [N, C, *sp]`: padding never wins a max (NaN
/// does); the average divides by the taps inside the input, or with
/// `count_include_pad` inside the padded input.
pub(super) fn pool(
    cx: &NodeCtx,
    kind: PoolKind,
    w: &Window,
    count_include_pad: bool,
) -> Result<Kernel, String> {
    let x = &cx.inputs[0];
    let dt = cx.out.dtype;
    let float = is_float(dt);
    if kind == PoolKind::Avg && !float {
        return Err(format!("average pooling on {dt} has no GPU kernel"));
    }
    if !float && dt != DType::I32 {
        return Err(format!("pooling on {dt} has no GPU kernel"));
    }
    let sp_in = &x.dims[2..];
    let pin: usize = sp_in.iter().product();
    let taps: usize = w.kernel.iter().product();
    let (init, step, fin) = match (kind, float) {
        // NaN sticks, as numpy's max; padding is skipped, never -inf'd in.
        (PoolKind::Max, true) => (
            "bits_(0xff800000u)",
            "if (!isnan_(acc) && (isnan_(v) || v > acc)) { acc = v; }",
            "acc".to_string(),
        ),
        (PoolKind::Max, false) => ("-2147483647 - 1", "acc = max(acc, v);", "acc".into()),
        (PoolKind::Avg, _) => (
            "0.0",
            "acc += v;",
            if count_include_pad {
                "acc / f32(padded)"
            } else {
                "acc / f32(count)"
            }
            .into(),
        ),
    };
    let defs = format!(
        "{loads}fn isnan_(v: f32) -> bool {{ return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u; }}\nfn value(i: u32) -> {ty} {{\n{oc}  let xb = (i / {pout}u) * {pin}u;\n  var acc: {ty} = {init};\n  var count = 0u;\n  var padded = 0u;\n  for (var r = 0u; r < {taps}u; r++) {{\n{kc}{tap}      if (inpad) {{ padded += 1u; }}\n      if (inb) {{ count += 1u; let v = x0(xb + at); {step} }}\n  }}\n  return {fin};\n}}\n",
        loads = cx.loads(),
        ty = cx.out_ty(),
        oc = coords(&cx.out.dims, "i", "c"),
        pout = cx.out.dims[2..].iter().product::<usize>(),
        kc = coords(&w.kernel, "r", "k").replace("  let", "      let"),
        tap = tap(sp_in, w, true),
    );
    Ok(cx.element(defs))
}
