//! One WGSL kernel per LIR node, specialised to its shapes, dtypes and
//! arena offsets. A node without a kernel here is `Err(reason)`, which the
//! executable turns into [`rlx_driver::BackendError::Unsupported`].

mod conv;
mod indexing;
mod matmul;
mod region;

use crate::wgsl::{
    broadcast_strides, coords, dot, element_shader, load_fn, reg_type, shader, Half, Operand,
};
use rlx_ir::op::{ArgReduceOp, BinaryOp, CmpOp, DotDims, ReduceOp, SliceSpec, UnaryOp};
use rlx_ir::{DType, Op};
use std::fmt::Write;

/// A generated kernel: its WGSL source and the workgroups to dispatch.
pub(crate) struct Kernel {
    pub source: String,
    pub groups: [u32; 3],
}

/// Everything a kernel generator needs to know about one node.
pub(crate) struct NodeCtx<'a> {
    pub op: &'a Op,
    pub index: usize,
    pub inputs: Vec<Operand>,
    pub out: Operand,
    pub flag_word: u64,
    /// How this kernel computes f16 values.
    pub half: Half,
}

impl NodeCtx<'_> {
    fn element(&self, defs: String) -> Kernel {
        let (source, groups) =
            element_shader(self.flag_word, self.index, &self.out, &defs, self.half);
        Kernel {
            source: self.enable(source),
            groups,
        }
    }

    /// `source` with the WGSL extensions its f16 mode needs.
    fn enable(&self, source: String) -> String {
        match self.half {
            Half::Native => format!("enable f16;\n{source}"),
            Half::Packed => source,
        }
    }

    fn loads(&self) -> String {
        self.inputs
            .iter()
            .enumerate()
            .map(|(k, x)| load_fn(&format!("x{k}"), x, self.half))
            .collect()
    }

    fn out_ty(&self) -> &'static str {
        reg_type(self.out.dtype, self.half).expect("checked")
    }

    /// `fn value` reading every input at its broadcast position of the
    /// output and combining the loaded `a`, `b`, `c` with `expr`.
    fn broadcast_map(&self, expr: &str) -> Kernel {
        let od = &self.out.dims;
        let mut body = String::new();
        let same = self.inputs.iter().all(|x| &x.dims == od);
        if !same {
            body += &coords(od, "i", "c");
        }
        for (k, x) in self.inputs.iter().enumerate() {
            let at = if same {
                "i".to_string()
            } else {
                dot("c", &broadcast_strides(&x.dims, od))
            };
            let _ = writeln!(body, "  let {} = x{k}({at});", ["a", "b", "c_"][k]);
        }
        let defs = format!(
            "{}fn value(i: u32) -> {} {{\n{body}  return {expr};\n}}\n",
            self.loads(),
            self.out_ty()
        );
        self.element(defs)
    }

    /// `fn value` reading input 0 at the u32 offset `at` (after `pre`).
    fn gather_map(&self, pre: &str, at: &str) -> Kernel {
        let defs = format!(
            "{}fn value(i: u32) -> {} {{\n{}{pre}  return x0({at});\n}}\n",
            self.loads(),
            self.out_ty(),
            coords(&self.out.dims, "i", "c")
        );
        self.element(defs)
    }
}

/// The kernel of `cx`'s node, or why there is none.
pub(crate) fn kernel(cx: &NodeCtx) -> Result<Kernel, String> {
    if cx.half == Half::Native && !computes_native_f16(cx.op) {
        let packed = NodeCtx {
            half: Half::Packed,
            inputs: cx.inputs.clone(),
            out: cx.out.clone(),
            ..*cx
        };
        return kernel(&packed);
    }
    for x in cx.inputs.iter().chain([&cx.out]) {
        if reg_type(x.dtype, Half::Packed).is_none() {
            return Err(format!(
                "dtype {} has no GPU kernel (f32, f16, i32, i64, bool do)",
                x.dtype
            ));
        }
    }
    let dt = cx.out.dtype;
    if matches!(dt, DType::F16 | DType::Bool) && !cx.out.byte.is_multiple_of(4) {
        return Err(format!(
            "a packed {dt} output at byte {} (not word-aligned)",
            cx.out.byte
        ));
    }
    let in0 = cx.inputs.first().map(|x| x.dtype);
    match cx.op {
        Op::Unary(u) => Ok(cx.broadcast_map(&unary_in(*u, dt, cx.half)?)),
        Op::Binary(b) => {
            refuse_i64_math(dt)?;
            Ok(cx.broadcast_map(&binary_in(*b, dt, cx.half)?))
        }
        Op::Compare(c) => {
            let e = compare(*c);
            Ok(cx.broadcast_map(&format!("select(0u, 1u, {e})")))
        }
        Op::Select =>
        // Loads: `a` the condition, `b` where true, `c_` where false.
        {
            Ok(cx.broadcast_map("select(c_, b, a != 0u)"))
        }
        Op::Cast => Ok(cx.broadcast_map(&cast(in0.expect("one input"), dt, cx.half))),
        Op::Reshape => Ok(cx.gather_map("", "i")),
        Op::Broadcast => {
            let s = broadcast_strides(&cx.inputs[0].dims, &cx.out.dims);
            Ok(cx.gather_map("", &dot("c", &s)))
        }
        Op::Transpose { perm } => {
            let own = rlx_ir::contiguous_strides(&cx.inputs[0].dims);
            let s: Vec<usize> = perm.iter().map(|&p| own[p]).collect();
            Ok(cx.gather_map("", &dot("c", &s)))
        }
        Op::Slice(spec) => Ok(slice(cx, spec)),
        Op::Concat { axis } => Ok(concat(cx, *axis)),
        Op::Gather { axis } => Ok(gather(cx, *axis)),
        Op::GatherElements { axis } => Ok(indexing::gather_elements(cx, *axis)),
        Op::ScatterAdd { axis } => indexing::scatter_add(cx, *axis),
        Op::Conv { window, groups } => conv::conv(cx, window, *groups),
        // The output padding is in the output's dims already.
        Op::ConvTranspose { window, groups, .. } => conv::conv_transpose(cx, window, *groups),
        Op::Pool {
            kind,
            window,
            count_include_pad,
        } => conv::pool(cx, *kind, window, *count_include_pad),
        Op::Iota { axis, start, step } => Ok(iota(cx, *axis, *start, *step)),
        Op::MatMul => {
            refuse_i64_math(dt)?;
            matmul::matmul(cx, &[])
        }
        Op::FusedMatMul { epilogue } => {
            refuse_i64_math(dt)?;
            matmul::matmul(cx, epilogue)
        }
        Op::ElementwiseRegion { steps } => region::elementwise_region(cx, steps),
        Op::DotGeneral(d) => {
            refuse_i64_math(dt)?;
            Ok(dot_general(cx, d))
        }
        Op::Reduce { op, axes, .. } => {
            refuse_i64_math(dt)?;
            reduce(cx, *op, axes)
        }
        Op::ArgReduce { op, axis, .. } => Ok(arg_reduce(cx, *op == ArgReduceOp::ArgMax, *axis)),
        Op::Softmax { axis } | Op::LogSoftmax { axis } => {
            softmax(cx, *axis, matches!(cx.op, Op::LogSoftmax { .. }))
        }
        Op::LayerNorm { axis, eps } => norm(cx, *axis, *eps, true),
        Op::RmsNorm { eps } => norm(cx, cx.out.dims.len().saturating_sub(1), *eps, false),
        other => Err(format!("no GPU kernel for op {}", other.mnemonic())),
    }
}

/// The ops whose kernels compute f16 in WGSL `f16` registers on an adapter
/// with `shader-f16` (elementwise math, fused regions, matmuls, and the
/// moves between them); the rest compute in f32 on every adapter.
fn computes_native_f16(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare(_)
            | Op::Select
            | Op::Cast
            | Op::ElementwiseRegion { .. }
            | Op::MatMul
            | Op::FusedMatMul { .. }
            | Op::Reshape
            | Op::Broadcast
            | Op::Transpose { .. }
            | Op::Slice(_)
            | Op::Concat { .. }
    )
}

/// The ops [`kernel`] has a kernel for (dtype permitting).
pub(crate) fn has_kernel(op: &Op) -> bool {
    matches!(
        op,
        Op::Input { .. }
            | Op::Param { .. }
            | Op::Constant { .. }
            | Op::Unary(_)
            | Op::Binary(_)
            | Op::Compare(_)
            | Op::Select
            | Op::Cast
            | Op::Reshape
            | Op::Broadcast
            | Op::Transpose { .. }
            | Op::Slice(_)
            | Op::Concat { .. }
            | Op::Gather { .. }
            | Op::GatherElements { .. }
            | Op::ScatterAdd { .. }
            | Op::Conv { .. }
            | Op::ConvTranspose { .. }
            | Op::Pool { .. }
            | Op::Iota { .. }
            | Op::MatMul
            | Op::FusedMatMul { .. }
            | Op::ElementwiseRegion { .. }
            | Op::DotGeneral(_)
            | Op::Reduce { .. }
            | Op::ArgReduce { .. }
            | Op::Softmax { .. }
            | Op::LogSoftmax { .. }
            | Op::LayerNorm { .. }
            | Op::RmsNorm { .. }
    )
}

/// True for the dtypes kernels compute in f32 registers.
pub(crate) fn is_float(dt: DType) -> bool {
    matches!(dt, DType::F32 | DType::F16)
}

fn refuse_i64_math(dt: DType) -> Result<(), String> {
    if dt == DType::I64 {
        return Err("i64 arithmetic has no GPU kernel (values compute in 32 bits)".into());
    }
    Ok(())
}

fn unary(u: UnaryOp, dt: DType) -> Result<String, String> {
    use UnaryOp::*;
    if !is_float(dt) {
        return match (u, dt) {
            (Not, DType::Bool) => Ok("1u - a".into()),
            (Not, DType::I32) => Ok("~a".into()),
            (Neg, DType::I32) => Ok("-a".into()),
            (Abs, DType::I32) => Ok("abs(a)".into()),
            (Sign, DType::I32) => Ok("sign(a)".into()),
            _ => Err(format!("unary {u:?} on {dt} has no GPU kernel")),
        };
    }
    Ok(match u {
        Neg => "-a",
        Abs => "abs(a)",
        Exp => "exp(a)",
        Log => "log(a)",
        Sqrt => "sqrt(a)",
        Rsqrt => "1.0 / sqrt(a)",
        Reciprocal => "1.0 / a",
        Tanh => "tanh_(a)",
        Sigmoid => "1.0 / (1.0 + exp(-a))",
        Relu => "max(a, 0.0)",
        Gelu => "gelu_(a)",
        GeluApprox => "0.5 * a * (1.0 + tanh_(0.7978845608028654 * (a + 0.044715 * a * a * a)))",
        Silu => "a / (1.0 + exp(-a))",
        Sin => "sin(a)",
        Cos => "cos(a)",
        Floor => "floor(a)",
        Ceil => "ceil(a)",
        Round => "round(a)",
        Sign => "sign(a)",
        Erf => "erf_(a)",
        Softplus => "max(a, 0.0) + log(1.0 + exp(-abs(a)))",
        Not => return Err("unary Not on f32 has no GPU kernel".into()),
    }
    .into())
}

fn binary(b: BinaryOp, dt: DType) -> Result<String, String> {
    use BinaryOp::*;
    let float = is_float(dt);
    Ok(match b {
        Add if dt != DType::Bool => "a + b",
        Sub if dt != DType::Bool => "a - b",
        Mul if dt != DType::Bool => "a * b",
        Max => "max(a, b)",
        Min => "min(a, b)",
        Div if float => "a / b",
        Pow if float => "pow_(a, b)",
        Mod if float => "fmod_(a, b)",
        Atan2 if float => "atan2(a, b)",
        And if !float => "a & b",
        Or if !float => "a | b",
        Xor if !float => "a ^ b",
        _ => return Err(format!("binary {b:?} on {dt} has no GPU kernel")),
    }
    .into())
}

fn compare(c: CmpOp) -> &'static str {
    match c {
        CmpOp::Eq => "a == b",
        CmpOp::Ne => "a != b",
        CmpOp::Lt => "a < b",
        CmpOp::Le => "a <= b",
        CmpOp::Gt => "a > b",
        CmpOp::Ge => "a >= b",
    }
}

/// [`unary`] in the kernel's registers (see [`in_registers`]).
fn unary_in(u: UnaryOp, dt: DType, half: Half) -> Result<String, String> {
    use UnaryOp::*;
    let exact = matches!(u, Neg | Abs | Relu | Floor | Ceil | Round | Sign);
    Ok(in_registers(unary(u, dt)?, dt, half, exact))
}

/// [`binary`] in the kernel's registers (see [`in_registers`]).
fn binary_in(b: BinaryOp, dt: DType, half: Half) -> Result<String, String> {
    use BinaryOp::*;
    let exact = matches!(b, Add | Sub | Mul | Max | Min);
    Ok(in_registers(binary(b, dt)?, dt, half, exact))
}

/// `expr` (over operands `a`, `b` of dtype `dt`) as the kernel's registers
/// need it. With native f16, an `exact` op (one IEEE f16 operation, which
/// rounds as the CPU's f32 result rounded to f16 does) runs in f16; the
/// others (WGSL's f16 transcendentals and division are a few ulp off, and
/// the `HELPERS` take f32) get their operands widened to f32 and the result
/// rounded back, so each op rounds once, as on the CPU.
fn in_registers(expr: String, dt: DType, half: Half, exact: bool) -> String {
    if half != Half::Native || dt != DType::F16 || exact {
        return expr;
    }
    // Split into words (identifiers and number literals) and the rest.
    let mut out = String::from("f16(");
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match word.as_str() {
            "a" | "b" => {
                let _ = write!(out, "f32({word})");
            }
            _ => out.push_str(word),
        }
        word.clear();
    };
    for ch in expr.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == '.' {
            word.push(ch);
        } else {
            flush(&mut word, &mut out);
            out.push(ch);
        }
    }
    flush(&mut word, &mut out);
    out.push(')');
    out
}

fn cast(from: DType, to: DType, half: Half) -> String {
    // Native f16 registers are their own type: every change is explicit.
    if half == Half::Native && from != to && (from == DType::F16 || to == DType::F16) {
        return match (from, to) {
            (DType::F16, DType::Bool) => "select(0u, 1u, a != 0.0)",
            (DType::F16, DType::F32) => "f32(a)",
            (DType::F16, _) => "cast_int(f32(a))",
            _ => "f16(a)",
        }
        .into();
    }
    match (from, to) {
        (f, t)
            if f == t
                || (f == DType::I32 && t == DType::I64)
                || (f == DType::I64 && t == DType::I32) =>
        {
            "a".into()
        }
        // Both float kinds live in f32 registers: f16 rounds when stored.
        (f, t) if is_float(f) && is_float(t) => "a".into(),
        (_, t) if is_float(t) => "f32(a)".into(),
        (f, DType::Bool) if is_float(f) => "select(0u, 1u, a != 0.0)".into(),
        (_, DType::Bool) => "select(0u, 1u, a != 0)".into(),
        // numpy truncates toward zero; a value i32 cannot hold is refused.
        (f, _) if is_float(f) => "cast_int(a)".into(),
        (DType::Bool, _) => "i32(a)".into(),
        _ => "a".into(),
    }
}

fn slice(cx: &NodeCtx, spec: &SliceSpec) -> Kernel {
    let own = rlx_ir::contiguous_strides(&cx.inputs[0].dims);
    let base: usize = spec.starts.iter().zip(&own).map(|(s, o)| s * o).sum();
    let mut at = format!("i32({base})");
    for (k, (&step, &o)) in spec.steps.iter().zip(&own).enumerate() {
        let _ = write!(at, " + i32(c{k}) * ({})", step * o as i64);
    }
    cx.gather_map("", &format!("u32({at})"))
}

fn concat(cx: &NodeCtx, axis: usize) -> Kernel {
    let mut body = coords(&cx.out.dims, "i", "c");
    let mut start = 0usize;
    for (k, x) in cx.inputs.iter().enumerate() {
        let own = rlx_ir::contiguous_strides(&x.dims);
        let len = x.dims[axis];
        let terms: Vec<String> = own
            .iter()
            .enumerate()
            .map(|(j, s)| {
                if j == axis {
                    format!("(c{j} - {start}u) * {s}u")
                } else {
                    format!("c{j} * {s}u")
                }
            })
            .collect();
        let at = if terms.is_empty() {
            "0u".into()
        } else {
            terms.join(" + ")
        };
        let _ = writeln!(
            body,
            "  if (c{axis} < {}u) {{ return x{k}({at}); }}",
            start + len
        );
        start += len;
    }
    let defs = format!(
        "{}fn value(i: u32) -> {} {{\n{body}  return x0(0u);\n}}\n",
        cx.loads(),
        cx.out_ty()
    );
    cx.element(defs)
}

fn gather(cx: &NodeCtx, axis: usize) -> Kernel {
    let (x, idx) = (&cx.inputs[0], &cx.inputs[1]);
    let own = rlx_ir::contiguous_strides(&x.dims);
    let ir = idx.dims.len();
    let dim = x.dims[axis];
    // Output coords: x's leading axes, the index's axes, x's trailing axes.
    let idx_strides = rlx_ir::contiguous_strides(&idx.dims);
    let idx_at: Vec<String> = (0..ir)
        .map(|j| format!("c{} * {}u", axis + j, idx_strides[j]))
        .collect();
    let idx_at = if idx_at.is_empty() {
        "0u".into()
    } else {
        idx_at.join(" + ")
    };
    let mut at: Vec<String> = (0..axis).map(|j| format!("c{j} * {}u", own[j])).collect();
    at.push(format!("u32(v) * {}u", own[axis]));
    at.extend((axis + 1..x.dims.len()).map(|j| format!("c{} * {}u", j + ir - 1, own[j])));
    let pre = format!(
        "  var v = x1({idx_at});\n  if (v < 0) {{ v += {dim}; }}\n  if (v < 0 || v >= {dim}) {{ fail(); v = 0; }}\n"
    );
    cx.gather_map(&pre, &at.join(" + "))
}

fn iota(cx: &NodeCtx, axis: usize, start: f64, step: f64) -> Kernel {
    let expr = match cx.out.dtype {
        DType::F32 | DType::F16 => format!("f32({start:?}) + f32({step:?}) * f32(c{axis})"),
        DType::Bool => format!("select(0u, 1u, {start:?} + {step:?} * f32(c{axis}) != 0.0)"),
        _ => format!("{} + {} * i32(c{axis})", start as i64, step as i64),
    };
    let defs = format!(
        "fn value(i: u32) -> {} {{\n{}  return {expr};\n}}\n",
        cx.out_ty(),
        coords(&cx.out.dims, "i", "c")
    );
    cx.element(defs)
}

/// XLA's dot_general: output = batch dims, lhs free dims, rhs free dims.
fn dot_general(cx: &NodeCtx, d: &DotDims) -> Kernel {
    let (a, b) = (&cx.inputs[0], &cx.inputs[1]);
    let (sa, sb) = (
        rlx_ir::contiguous_strides(&a.dims),
        rlx_ir::contiguous_strides(&b.dims),
    );
    let free = |dims: &[usize], batch: &[usize], contract: &[usize]| -> Vec<usize> {
        (0..dims.len())
            .filter(|i| !batch.contains(i) && !contract.contains(i))
            .collect()
    };
    let fa = free(&a.dims, &d.lhs_batch, &d.lhs_contract);
    let fb = free(&b.dims, &d.rhs_batch, &d.rhs_contract);
    let nb = d.lhs_batch.len();
    let mut a_terms = Vec::new();
    let mut b_terms = Vec::new();
    for (j, (&la, &rb)) in d.lhs_batch.iter().zip(&d.rhs_batch).enumerate() {
        a_terms.push(format!("c{j} * {}u", sa[la]));
        b_terms.push(format!("c{j} * {}u", sb[rb]));
    }
    for (j, &ax) in fa.iter().enumerate() {
        a_terms.push(format!("c{} * {}u", nb + j, sa[ax]));
    }
    for (j, &ax) in fb.iter().enumerate() {
        b_terms.push(format!("c{} * {}u", nb + fa.len() + j, sb[ax]));
    }
    let cdims: Vec<usize> = d.lhs_contract.iter().map(|&i| a.dims[i]).collect();
    let kk: usize = cdims.iter().product();
    let ca: Vec<usize> = d.lhs_contract.iter().map(|&i| sa[i]).collect();
    let cb: Vec<usize> = d.rhs_contract.iter().map(|&i| sb[i]).collect();
    let join = |t: Vec<String>| {
        if t.is_empty() {
            "0u".to_string()
        } else {
            t.join(" + ")
        }
    };
    let acc = if is_float(cx.out.dtype) { "0.0" } else { "0" };
    let defs = format!(
        "{}fn value(i: u32) -> {ty} {{\n{}  let ab = {};\n  let bb = {};\n  var acc: {ty} = {acc};\n  for (var r = 0u; r < {kk}u; r++) {{\n{}    acc += x0(ab + {}) * x1(bb + {});\n  }}\n  return acc;\n}}\n",
        cx.loads(),
        coords(&cx.out.dims, "i", "c"),
        join(a_terms),
        join(b_terms),
        coords(&cdims, "r", "k").replace("  let", "    let"),
        dot("k", &ca),
        dot("k", &cb),
        ty = cx.out_ty()
    );
    cx.element(defs)
}

fn reduce(cx: &NodeCtx, op: ReduceOp, axes: &[usize]) -> Result<Kernel, String> {
    let x = &cx.inputs[0];
    let own = rlx_ir::contiguous_strides(&x.dims);
    let kept: Vec<usize> = (0..x.dims.len()).filter(|a| !axes.contains(a)).collect();
    let kept_dims: Vec<usize> = kept.iter().map(|&a| x.dims[a]).collect();
    let kept_strides: Vec<usize> = kept.iter().map(|&a| own[a]).collect();
    let rdims: Vec<usize> = axes.iter().map(|&a| x.dims[a]).collect();
    let rstrides: Vec<usize> = axes.iter().map(|&a| own[a]).collect();
    let count: usize = rdims.iter().product();
    let float = is_float(cx.out.dtype);
    if !float && op == ReduceOp::Mean {
        return Err(format!("mean over {} has no GPU kernel", cx.out.dtype));
    }
    let (init, step) = match (op, float) {
        (ReduceOp::Sum | ReduceOp::Mean, true) => (
            "0.0",
            "let y = v - comp; let s = acc + y; comp = (s - acc) - y; acc = s;",
        ),
        (ReduceOp::Sum, false) => ("0", "acc += v;"),
        (ReduceOp::Max, true) => ("bits_(0xff800000u)", "acc = max(acc, v);"),
        (ReduceOp::Max, false) => ("-2147483647 - 1", "acc = max(acc, v);"),
        (ReduceOp::Min, true) => ("bits_(0x7f800000u)", "acc = min(acc, v);"),
        (ReduceOp::Min, false) => ("2147483647", "acc = min(acc, v);"),
        (ReduceOp::Prod, true) => ("1.0", "acc *= v;"),
        (ReduceOp::Prod, false) => ("1", "acc *= v;"),
        (ReduceOp::Mean, false) => unreachable!("refused above"),
    };
    let fin = if op == ReduceOp::Mean {
        format!("acc / {count}.0")
    } else {
        "acc".into()
    };
    let ty = cx.out_ty();
    let defs = format!(
        "{}fn value(i: u32) -> {ty} {{\n{}  let base = {};\n  var acc: {ty} = {init};\n  var comp: {ty} = {init};\n  for (var r = 0u; r < {count}u; r++) {{\n{}    let v = x0(base + {});\n    {step}\n  }}\n  return {fin};\n}}\n",
        cx.loads(),
        coords(&kept_dims, "i", "c"),
        dot("c", &kept_strides),
        coords(&rdims, "r", "k").replace("  let", "    let"),
        dot("k", &rstrides),
    );
    Ok(cx.element(defs))
}

/// numpy argmax / argmin along `axis`: the first index of the extremum.
fn arg_reduce(cx: &NodeCtx, max: bool, axis: usize) -> Kernel {
    let (_, len, inner) = lanes(&cx.inputs[0].dims, axis);
    let better = if max { ">" } else { "<" };
    let defs = format!(
        "{}fn value(i: u32) -> i32 {{\n  let base = (i / {inner}u) * {}u + i % {inner}u;\n  var best = x0(base);\n  var at = 0;\n  for (var j = 1u; j < {len}u; j++) {{ let v = x0(base + j * {inner}u); if (v {better} best) {{ best = v; at = i32(j); }} }}\n  return at;\n}}\n",
        cx.loads(),
        len * inner
    );
    cx.element(defs)
}

/// Lanes along `axis`: (outer, len, inner) of `dims`.
fn lanes(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = dims[..axis].iter().product();
    let inner = dims[axis + 1..].iter().product();
    (outer, dims[axis], inner)
}

/// The store of a lane kernel (softmax, norms: one thread per lane of
/// `len` elements `stride` apart from `base`), each value `outv(base, j,
/// p, q)`: `fn st` and the loop. f32 stores each element; f16 a word of
/// two (its lanes must be contiguous and of even length, so that no two
/// threads share a word); other dtypes have no kernel.
fn lane_store(out: &Operand, len: usize, stride: usize) -> Result<(String, String), String> {
    let w = out.byte / 4;
    match out.dtype {
        DType::F32 => Ok((
            format!("fn st(e: u32, v: f32) {{ mem[{w}u + e] = bitcast<u32>(v); }}\n"),
            format!("  for (var j = 0u; j < {len}u; j++) {{ st(base + j * {stride}u, outv(base, j, p, q)); }}\n"),
        )),
        DType::F16 if stride == 1 && len.is_multiple_of(2) => Ok((
            String::new(),
            format!("  for (var j = 0u; j < {len}u; j += 2u) {{ mem[{w}u + (base + j) / 2u] = pack2x16float(vec2<f32>(outv(base, j, p, q), outv(base, j + 1u, p, q))); }}\n"),
        )),
        DType::F16 => Err(format!(
            "f16 here needs lanes along the last axis of even length (given {len}, {stride} apart)"
        )),
        dt => Err(format!("dtype {dt} has no GPU kernel for this op (f32 and f16 do)")),
    }
}

/// One thread per lane along `axis`: max, sum of exponentials, write.
fn softmax(cx: &NodeCtx, axis: usize, log: bool) -> Result<Kernel, String> {
    let (outer, len, inner) = lanes(&cx.out.dims, axis);
    let write = if log {
        "v - p - log(q)"
    } else {
        "exp(v - p) / q"
    };
    let (st, writes) = lane_store(&cx.out, len, inner)?;
    let defs = format!(
        "{}{st}fn outv(base: u32, j: u32, p: f32, q: f32) -> f32 {{ let v = x0(base + j * {inner}u); return {write}; }}\n",
        cx.loads()
    );
    let body = format!(
        "  let base = (t / {inner}u) * {}u + t % {inner}u;\n  var m = bits_(0xff800000u);\n  for (var j = 0u; j < {len}u; j++) {{ m = max(m, x0(base + j * {inner}u)); }}\n  var s = 0.0;\n  for (var j = 0u; j < {len}u; j++) {{ s += exp(x0(base + j * {inner}u) - m); }}\n  let p = m;\n  let q = s;\n{writes}",
        len * inner
    );
    let (source, groups) = shader(cx.flag_word, cx.index, &defs, &body, (outer * inner) as u64);
    Ok(Kernel { source, groups })
}

/// Layer norm (mean and variance) or RMS norm over the axes from `axis`
/// on, one thread per row; gamma / beta indexed by the position in the row.
fn norm(cx: &NodeCtx, axis: usize, eps: f64, layer: bool) -> Result<Kernel, String> {
    let row: usize = cx.out.dims[axis..].iter().product();
    let rows = cx.out.numel() / row.max(1);
    let g = if cx.inputs.len() > 1 { "x1(j)" } else { "1.0" };
    let b = if cx.inputs.len() > 2 { "x2(j)" } else { "0.0" };
    let (st, writes) = lane_store(&cx.out, row, 1)?;
    // `p` is the mean (0 for RMS norm), `q` the inverse deviation.
    let defs = format!(
        "{}{st}fn outv(base: u32, j: u32, p: f32, q: f32) -> f32 {{ return (x0(base + j) - p) * q * {g} + {b}; }}\n",
        cx.loads()
    );
    let (mean, centre) = if layer {
        (format!("  var mean = 0.0;\n  for (var j = 0u; j < {row}u; j++) {{ mean += x0(base + j); }}\n  mean = mean / {row}.0;\n"), "x0(base + j) - mean")
    } else {
        ("  let mean = 0.0;\n".to_string(), "x0(base + j)")
    };
    let body = format!(
        "  let base = t * {row}u;\n{mean}  var vs = 0.0;\n  for (var j = 0u; j < {row}u; j++) {{ let d = {centre}; vs += d * d; }}\n  let p = mean;\n  let q = 1.0 / sqrt(vs / {row}.0 + f32({eps:?}));\n{writes}"
    );
    let (source, groups) = shader(cx.flag_word, cx.index, &defs, &body, rows as u64);
    Ok(Kernel { source, groups })
}
