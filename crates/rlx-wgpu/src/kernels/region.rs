//! Fused elementwise regions (`Op::ElementwiseRegion`, and the epilogue of
//! `Op::FusedMatMul`) as one WGSL function: each step becomes a small
//! function over its operands' registers (the same expression the step's
//! unfused kernel uses), and the region's function evaluates them in order
//! at one output element, reading every region input at its broadcast
//! position. No intermediate ever reaches memory.

use super::{binary_in, cast, compare, refuse_i64_math, unary_in, NodeCtx};
use crate::wgsl::{broadcast_strides, coords, dot, reg_type, Half, Operand};
use rlx_ir::op::{ChainOperand, ChainStep};
use rlx_ir::ops::region::step_shapes;
use rlx_ir::{DType, Shape};
use std::fmt::Write;

/// Where region input `k` comes from in the generated code.
pub(crate) enum RegionInput<'a> {
    /// Node input `load` (read with `x{load}`), broadcast to the output.
    Load(usize, &'a Operand),
    /// The region function's argument `m` (a matmul's accumulator) of this
    /// dtype, already at the output element.
    Arg(DType),
}

impl RegionInput<'_> {
    fn dtype(&self) -> DType {
        match self {
            RegionInput::Load(_, x) => x.dtype,
            RegionInput::Arg(dt) => *dt,
        }
    }
}

/// WGSL defining `fn {name}(i: u32[, m: T]) -> T`: the region's value at
/// output element `i` of `out_dims` (`m` only when an input is
/// [`RegionInput::Arg`]), or why a step has no GPU form.
pub(crate) fn region_fn(
    name: &str,
    steps: &[ChainStep],
    inputs: &[RegionInput],
    out_dims: &[usize],
    half: Half,
) -> Result<String, String> {
    let shapes: Vec<Shape> = inputs
        .iter()
        .map(|x| match x {
            RegionInput::Load(_, op) => Shape::new(&op.dims, op.dtype),
            RegionInput::Arg(dt) => Shape::new(out_dims, *dt),
        })
        .collect();
    let refs: Vec<&Shape> = shapes.iter().collect();
    let step_dtypes: Vec<DType> = step_shapes(steps, &refs)?
        .iter()
        .map(|s| s.dtype())
        .collect();
    let dtype_of = |o: ChainOperand| match o {
        ChainOperand::Input(k) => inputs[k].dtype(),
        ChainOperand::Step(j) => step_dtypes[j],
    };
    let ty = |dt: DType| {
        reg_type(dt, half).ok_or_else(|| format!("a region step of dtype {dt} has no GPU kernel"))
    };

    let mut defs = String::new();
    for (k, step) in steps.iter().enumerate() {
        let dt = step_dtypes[k];
        let expr =
            step_expr(step, dt, &dtype_of, half).map_err(|e| format!("region step {k}: {e}"))?;
        // Packed f16 computes in f32: round each step as its unfused node's
        // store would (the CPU runs regions bit-identical to the steps).
        let expr = if dt == DType::F16 && half == Half::Packed {
            format!("quantizeToF16({expr})")
        } else {
            expr
        };
        let params: Vec<String> = step
            .operands()
            .iter()
            .zip(["a", "b", "c_"])
            .map(|(&o, p)| Ok(format!("{p}: {}", ty(dtype_of(o))?)))
            .collect::<Result<_, String>>()?;
        let _ = writeln!(
            defs,
            "fn {name}_s{k}({}) -> {} {{ return {expr}; }}",
            params.join(", "),
            ty(dt)?
        );
    }

    let read: Vec<bool> = (0..inputs.len())
        .map(|k| {
            steps
                .iter()
                .any(|s| s.operands().contains(&ChainOperand::Input(k)))
        })
        .collect();
    let broadcast = inputs
        .iter()
        .zip(&read)
        .any(|(x, &r)| r && matches!(x, RegionInput::Load(_, op) if op.dims != out_dims));
    let mut body = if broadcast {
        coords(out_dims, "i", "c")
    } else {
        String::new()
    };
    let mut arg = String::new();
    for (k, x) in inputs.iter().enumerate().filter(|&(k, _)| read[k]) {
        let value = match x {
            RegionInput::Load(load, op) if op.dims == out_dims => format!("x{load}(i)"),
            RegionInput::Load(load, op) => {
                format!(
                    "x{load}({})",
                    dot("c", &broadcast_strides(&op.dims, out_dims))
                )
            }
            RegionInput::Arg(dt) => {
                arg = format!(", m: {}", ty(*dt)?);
                "m".into()
            }
        };
        let _ = writeln!(body, "  let r{k} = {value};");
    }
    for (k, step) in steps.iter().enumerate() {
        let args: Vec<String> = step
            .operands()
            .iter()
            .map(|o| match o {
                ChainOperand::Input(j) => format!("r{j}"),
                ChainOperand::Step(j) => format!("s{j}"),
            })
            .collect();
        let _ = writeln!(body, "  let s{k} = {name}_s{k}({});", args.join(", "));
    }
    let last = steps.len() - 1;
    let _ = writeln!(
        defs,
        "fn {name}(i: u32{arg}) -> {} {{\n{body}  return s{last};\n}}",
        ty(step_dtypes[last])?
    );
    Ok(defs)
}

/// The WGSL expression of one step over its parameters `a`, `b`, `c_`
/// (the expressions of the unfused kernels); `dt` is the step's dtype.
fn step_expr(
    step: &ChainStep,
    dt: DType,
    dtype_of: &dyn Fn(ChainOperand) -> DType,
    half: Half,
) -> Result<String, String> {
    Ok(match *step {
        ChainStep::Unary(u, _) => unary_in(u, dt, half)?,
        ChainStep::Binary(b, _, _) => {
            refuse_i64_math(dt)?;
            binary_in(b, dt, half)?
        }
        ChainStep::Compare(c, _, _) => format!("select(0u, 1u, {})", compare(c)),
        ChainStep::Select(..) => "select(c_, b, a != 0u)".into(),
        ChainStep::Cast(x, to) => cast(dtype_of(x), to, half),
    })
}

/// The kernel of an `Op::ElementwiseRegion` node: one thread per output
/// element (per word of a packed output) evaluating every step.
pub(crate) fn elementwise_region(
    cx: &NodeCtx,
    steps: &[ChainStep],
) -> Result<super::Kernel, String> {
    let inputs: Vec<RegionInput> = cx
        .inputs
        .iter()
        .enumerate()
        .map(|(k, x)| RegionInput::Load(k, x))
        .collect();
    let f = region_fn("region", steps, &inputs, &cx.out.dims, cx.half)?;
    let defs = format!(
        "{}{f}fn value(i: u32) -> {} {{ return region(i); }}\n",
        cx.loads(),
        cx.out_ty()
    );
    Ok(cx.element(defs))
}
