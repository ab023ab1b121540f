//! Fused elementwise regions: `Op::ElementwiseRegion` runs a chain of
//! elementwise steps over broadcast inputs as one op, so a backend can
//! compute it in one pass without intermediate buffers; `Op::FusedMatMul`
//! is a matmul whose result runs through such a chain (bias, activation,
//! scaling, residual) before it is stored.
//!
//! Semantics: every step is evaluated at the region's output shape (the
//! broadcast of all region inputs); elementwise ops commute with
//! broadcasting, so this equals running the steps as separate nodes. The
//! region's value is its last step. The decomposition replays the steps as
//! primitive nodes, which is the reference every backend kernel is tested
//! against, the autodiff / vmap rule, and the fallback for backends that do
//! not claim regions.

use super::elementwise::{infer_binary, infer_compare, infer_select, infer_unary};
use super::InferResult;
use crate::op::{BinaryOp, CmpOp, UnaryOp};
use crate::{DType, Graph, IrError, NodeId, Op, Shape};
use std::fmt;

/// Where a step reads a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChainOperand {
    /// Region input `i` (the node's `i`-th input), broadcast to the output.
    Input(usize),
    /// The result of an earlier step.
    Step(usize),
}

/// One elementwise step of a region.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ChainStep {
    /// A unary function.
    Unary(UnaryOp, ChainOperand),
    /// Binary arithmetic (both operands share a dtype).
    Binary(BinaryOp, ChainOperand, ChainOperand),
    /// A comparison (Bool result).
    Compare(CmpOp, ChainOperand, ChainOperand),
    /// `where(cond, a, b)`.
    Select(ChainOperand, ChainOperand, ChainOperand),
    /// Conversion to a dtype.
    Cast(ChainOperand, DType),
}

impl ChainStep {
    /// The operands, in order.
    pub fn operands(&self) -> Vec<ChainOperand> {
        match *self {
            ChainStep::Unary(_, x) | ChainStep::Cast(x, _) => vec![x],
            ChainStep::Binary(_, a, b) | ChainStep::Compare(_, a, b) => vec![a, b],
            ChainStep::Select(c, a, b) => vec![c, a, b],
        }
    }

    /// The primitive op this step runs.
    pub fn op(&self) -> Op {
        match *self {
            ChainStep::Unary(u, _) => Op::Unary(u),
            ChainStep::Binary(b, _, _) => Op::Binary(b),
            ChainStep::Compare(c, _, _) => Op::Compare(c),
            ChainStep::Select(..) => Op::Select,
            ChainStep::Cast(..) => Op::Cast,
        }
    }
}

impl fmt::Display for ChainOperand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainOperand::Input(i) => write!(f, "in{i}"),
            ChainOperand::Step(s) => write!(f, "s{s}"),
        }
    }
}

impl fmt::Display for ChainStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let args: Vec<String> = self.operands().iter().map(|o| o.to_string()).collect();
        match self {
            ChainStep::Cast(_, to) => write!(f, "cast<{to}>({})", args.join(", ")),
            _ => write!(f, "{}({})", self.op().mnemonic(), args.join(", ")),
        }
    }
}

/// The textual payload of a region: `[s0 = exp(in0); s1 = add(s0, in1)]`.
pub fn region_text(steps: &[ChainStep]) -> String {
    let parts: Vec<String> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("s{i} = {s}"))
        .collect();
    format!("[{}]", parts.join("; "))
}

/// The shape of every step at the region's output dims (the last one is the
/// region's shape).
pub fn step_shapes(steps: &[ChainStep], inputs: &[&Shape]) -> Result<Vec<Shape>, String> {
    if steps.is_empty() {
        return Err("an elementwise region needs at least one step".into());
    }
    if inputs.is_empty() {
        return Err("an elementwise region needs at least one input".into());
    }
    // The output dims: the broadcast of every input.
    let mut out_dims = inputs[0].clone();
    for s in &inputs[1..] {
        let probe = Shape::from_dims(s.dims().to_vec(), out_dims.dtype());
        out_dims = infer_binary(BinaryOp::Add, &[&out_dims, &probe])
            .map_err(|e| format!("region inputs do not broadcast: {e}"))?;
    }
    let at_out = |dtype: DType| Shape::from_dims(out_dims.dims().to_vec(), dtype);
    let mut shapes: Vec<Shape> = Vec::with_capacity(steps.len());
    for (k, step) in steps.iter().enumerate() {
        let mut operand_shapes = Vec::new();
        for o in step.operands() {
            operand_shapes.push(match o {
                ChainOperand::Input(i) => at_out(
                    inputs
                        .get(i)
                        .ok_or_else(|| format!("step {k} reads input {i} of {}", inputs.len()))?
                        .dtype(),
                ),
                ChainOperand::Step(j) if j < k => shapes[j].clone(),
                ChainOperand::Step(j) => {
                    return Err(format!("step {k} reads step {j}, which is not earlier"))
                }
            });
        }
        let refs: Vec<&Shape> = operand_shapes.iter().collect();
        let shape = match step {
            ChainStep::Unary(u, _) => infer_unary(*u, &refs),
            ChainStep::Binary(b, _, _) => infer_binary(*b, &refs),
            ChainStep::Compare(c, _, _) => infer_compare(*c, &refs),
            ChainStep::Select(..) => infer_select(&refs),
            ChainStep::Cast(_, to) => Ok(at_out(*to)),
        }
        .map_err(|e| format!("step {k} ({step}): {e}"))?;
        shapes.push(shape);
    }
    Ok(shapes)
}

/// Shape rule of `Op::ElementwiseRegion`.
pub fn infer_region(steps: &[ChainStep], inputs: &[&Shape]) -> InferResult {
    Ok(step_shapes(steps, inputs)?
        .pop()
        .expect("step_shapes returns one shape per step"))
}

/// Replays the steps as primitive nodes; returns the last, broadcast to
/// `out` when the steps do not read every input.
pub fn decompose_region(
    g: &mut Graph,
    steps: &[ChainStep],
    inputs: &[NodeId],
    out: &Shape,
) -> Result<NodeId, IrError> {
    let mut values: Vec<NodeId> = Vec::with_capacity(steps.len());
    for step in steps {
        let args: Vec<NodeId> = step
            .operands()
            .iter()
            .map(|o| match *o {
                ChainOperand::Input(i) => inputs[i],
                ChainOperand::Step(j) => values[j],
            })
            .collect();
        let declared = match step {
            ChainStep::Cast(x, to) => {
                let src = match *x {
                    ChainOperand::Input(i) => inputs[i],
                    ChainOperand::Step(j) => values[j],
                };
                Some(Shape::from_dims(g.shape(src).dims().to_vec(), *to))
            }
            _ => None,
        };
        values.push(g.try_node(step.op(), &args, declared)?);
    }
    let last = *values.last().expect("regions have steps");
    if g.shape(last) == out {
        Ok(last)
    } else {
        g.try_node(Op::Broadcast, &[last], Some(out.clone()))
    }
}

/// Shape rule of `Op::FusedMatMul`: inputs `a, b, extra...`; the epilogue's
/// input 0 is `matmul(a, b)`, input `i >= 1` is `extra[i - 1]`. The epilogue
/// keeps the matmul's dims and dtype (it is computed in place).
pub fn infer_fused_matmul(epilogue: &[ChainStep], inputs: &[&Shape]) -> InferResult {
    if inputs.len() < 2 {
        return Err(format!(
            "fused matmul takes a, b and extras, got {} inputs",
            inputs.len()
        ));
    }
    let mm = super::linalg::infer_matmul(&inputs[..2])?;
    let mut region_inputs = vec![&mm];
    region_inputs.extend_from_slice(&inputs[2..]);
    let out = infer_region(epilogue, &region_inputs)?;
    if out != mm {
        return Err(format!(
            "the epilogue turns the matmul result {mm} into {out}; it must keep its dims and dtype"
        ));
    }
    Ok(out)
}

/// Decomposition of `Op::FusedMatMul`: the matmul, then the epilogue steps.
pub fn decompose_fused_matmul(
    g: &mut Graph,
    epilogue: &[ChainStep],
    inputs: &[NodeId],
    out: &Shape,
) -> Result<NodeId, IrError> {
    let mm = g.try_node(Op::MatMul, &inputs[..2], None)?;
    let mut region_inputs = vec![mm];
    region_inputs.extend_from_slice(&inputs[2..]);
    decompose_region(g, epilogue, &region_inputs, out)
}
