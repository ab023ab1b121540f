//! Control-flow family: [`IfSpec`], [`WhileSpec`], [`ScanSpec`],
//! [`CustomFnSpec`] and the projection [`crate::Op::TupleGet`].
//!
//! A control op runs *sub-graphs*: ordinary [`Graph`]s whose `Input` leaves
//! (in declaration order) are the parameters and whose outputs are the
//! results. Sub-graphs hold no params (pass closed-over values as operands)
//! and have static shapes.
//!
//! A node has one output, so a control op yields a *tuple*: its node is a
//! `u8[total]` buffer holding every result's bytes back to back
//! ([`tuple_layout`]), and each result is read out by a `TupleGet` node
//! carrying the result's index, byte offset and shape. The builders here
//! ([`try_if`], [`try_while`], [`try_scan`], [`try_custom_fn`]) emit the op
//! and its `TupleGet`s and return the result nodes.
//!
//! ```
//! use rlx_ir::{DType, Graph, GraphExt, Shape};
//! // A running sum: carry c, step x_t -> (c + x_t, c + x_t).
//! let mut step = Graph::new("step");
//! let c = step.input("c", Shape::new(&[2], DType::F32));
//! let x = step.input("x_t", Shape::new(&[2], DType::F32));
//! let s = step.add(c, x);
//! step.set_outputs(vec![s, s]);
//! let mut g = Graph::new("cumsum");
//! let c0 = g.input("c0", Shape::new(&[2], DType::F32));
//! let xs = g.input("xs", Shape::new(&[5, 2], DType::F32));
//! let (last, ys) = g.scan(step, &[c0], &[xs]);
//! g.set_outputs(vec![last[0], ys[0]]);
//! assert!(rlx_ir::verify_all(&g).is_empty());
//! assert_eq!(g.shape(ys[0]), &Shape::new(&[5, 2], DType::F32));
//! ```

use super::InferResult;
use crate::{verify_all, DType, Graph, IrError, NodeId, Op, Shape};
use std::sync::Arc;

/// Default iteration bound of a `While` (exceeding it is a run-time error).
pub const DEFAULT_MAX_ITERATIONS: usize = 1 << 20;

/// `If`: inputs `[pred (bool scalar), operands...]`; runs one branch on the operands.
#[derive(Clone, Debug, PartialEq)]
pub struct IfSpec {
    /// Runs when the predicate is true.
    pub then_branch: Arc<Graph>,
    /// Runs when the predicate is false (same signature as `then_branch`).
    pub else_branch: Arc<Graph>,
}

/// `While`: inputs are the initial carry; `body` maps carry -> carry while
/// `cond` (carry -> bool scalar) holds.
#[derive(Clone, Debug, PartialEq)]
pub struct WhileSpec {
    /// The loop condition.
    pub cond: Arc<Graph>,
    /// The loop body.
    pub body: Arc<Graph>,
    /// More iterations than this is an error, never a hang.
    pub max_iterations: usize,
}

/// `Scan` (`jax.lax.scan`): inputs `[carry..., xs...]`; `body` maps
/// `(carry..., x_t...) -> (carry..., y_t...)` where `x_t = xs[t]`; results
/// are `[final carry..., ys...]` with the `y_t` stacked on a leading axis.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanSpec {
    /// The step function.
    pub body: Arc<Graph>,
    /// How many leading operands (and body outputs) are carried state.
    pub num_carry: usize,
    /// Number of steps (the leading dim of every scanned input).
    pub length: usize,
    /// Walk `t` from `length - 1` down to 0 (`ys[t]` still belongs to `xs[t]`).
    pub reverse: bool,
    /// Reverse mode: `None` stores every step's carry; `Some(k)` (`k >= 1`)
    /// stores one carry per segment of `k` steps and recomputes the others.
    /// `k` need not divide the length: the segment processed last is then
    /// shorter (`length % k` steps), so `ceil(length / k)` carries are
    /// stored. `k >= length` stores every carry, as `None` does.
    pub checkpoint: Option<usize>,
}

/// A user function with optional user derivative rules (`jax.custom_vjp` /
/// `jax.custom_jvp`). Transforms use the rules when given, else the body.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomFnSpec {
    /// A name for reports.
    pub name: String,
    /// `(operands...) -> (results...)`.
    pub body: Arc<Graph>,
    /// `(operands..., cotangent per result...) -> (cotangent per operand...)`.
    pub vjp: Option<Arc<Graph>>,
    /// `(operands..., tangent per operand...) -> (tangent per result...)`.
    pub jvp: Option<Arc<Graph>>,
}

/// Input and output shapes of a sub-graph.
pub fn signature(g: &Graph) -> (Vec<Shape>, Vec<Shape>) {
    let ins = g.inputs().into_iter().map(|(_, _, s)| s.clone()).collect();
    let outs = g.outputs().iter().map(|&o| g.shape(o).clone()).collect();
    (ins, outs)
}

/// The sub-graphs of a control op with their roles (empty for other ops).
pub fn subgraphs(op: &Op) -> Vec<(&'static str, &Graph)> {
    match op {
        Op::If(s) => vec![("then", &*s.then_branch), ("else", &*s.else_branch)],
        Op::While(s) => vec![("cond", &*s.cond), ("body", &*s.body)],
        Op::Scan(s) => vec![("body", &*s.body)],
        Op::CustomFn(s) => {
            let mut v = vec![("body", &*s.body)];
            if let Some(j) = &s.vjp {
                v.push(("vjp", &**j));
            }
            if let Some(j) = &s.jvp {
                v.push(("jvp", &**j));
            }
            v
        }
        _ => Vec::new(),
    }
}

/// True for ops whose node is a tuple read out by `TupleGet`.
pub fn is_tuple_op(op: &Op) -> bool {
    matches!(op, Op::If(_) | Op::While(_) | Op::Scan(_) | Op::CustomFn(_))
}

/// The textual-IR mnemonic of a control op.
pub(crate) fn mnemonic(op: &Op) -> String {
    match op {
        Op::If(_) => "if".into(),
        Op::While(s) => format!("while{{max_iterations={}}}", s.max_iterations),
        Op::Scan(s) => format!(
            "scan{{num_carry={}, length={}, reverse={}, checkpoint={:?}}}",
            s.num_carry, s.length, s.reverse, s.checkpoint
        ),
        Op::CustomFn(s) => format!(
            "custom_fn{{name={:?}, vjp={}, jvp={}}}",
            s.name,
            s.vjp.is_some(),
            s.jvp.is_some()
        ),
        Op::TupleGet {
            index,
            offset,
            shape,
        } => format!("tuple_get{{index={index}, offset={offset}, shape={shape}}}"),
        _ => op.mnemonic(),
    }
}

/// Result shapes of a tuple op given its operand shapes (its sub-graphs'
/// outputs; for `Scan` the ys gain the leading `length` axis).
pub fn result_shapes(op: &Op) -> Option<Vec<Shape>> {
    Some(match op {
        Op::If(s) => signature(&s.then_branch).1,
        Op::While(s) => signature(&s.body).1,
        Op::CustomFn(s) => signature(&s.body).1,
        Op::Scan(s) => {
            let outs = signature(&s.body).1;
            outs.iter()
                .enumerate()
                .map(|(i, o)| {
                    if i < s.num_carry {
                        o.clone()
                    } else {
                        let mut d = vec![crate::Dim::Static(s.length)];
                        d.extend(o.dims().iter().cloned());
                        Shape::from_dims(d, o.dtype())
                    }
                })
                .collect()
        }
        _ => return None,
    })
}

/// Byte offset of each result in the tuple buffer, and the total size.
pub fn tuple_layout(shapes: &[Shape]) -> (Vec<usize>, usize) {
    let mut offsets = Vec::with_capacity(shapes.len());
    let mut total = 0;
    for s in shapes {
        offsets.push(total);
        total += s.size_bytes().unwrap_or(0);
    }
    (offsets, total)
}

fn fmt_shapes(s: &[Shape]) -> String {
    let v: Vec<String> = s.iter().map(ToString::to_string).collect();
    format!("({})", v.join(", "))
}

/// Checks a sub-graph: verifies, has no params, static shapes.
fn check_subgraph(role: &str, g: &Graph) -> Result<(), String> {
    let errs = verify_all(g);
    if let Some(e) = errs.first() {
        return Err(format!(
            "{role} graph \"{}\" does not verify: {e}",
            g.name()
        ));
    }
    if let Some((_, name, _)) = g.params().first() {
        return Err(format!(
            "{role} graph \"{}\" has param \"{name}\"; pass closed-over values as operands",
            g.name()
        ));
    }
    if let Some(n) = g.nodes().iter().find(|n| !n.shape.is_static()) {
        return Err(format!(
            "{role} graph \"{}\" has a symbolic shape {}",
            g.name(),
            n.shape
        ));
    }
    Ok(())
}

fn expect_shapes(what: &str, want: &[Shape], given: &[Shape]) -> Result<(), String> {
    if want != given {
        return Err(format!(
            "{what}: expected {}, given {}",
            fmt_shapes(want),
            fmt_shapes(given)
        ));
    }
    Ok(())
}

fn tuple_shape(op: &Op) -> InferResult {
    let shapes = result_shapes(op).unwrap_or_default();
    let (_, total) = tuple_layout(&shapes);
    Ok(Shape::new(&[total], DType::U8))
}

pub(crate) fn infer_if(s: &IfSpec, inputs: &[&Shape]) -> InferResult {
    let Some((pred, operands)) = inputs.split_first() else {
        return Err("expects a predicate and operands, given no inputs".into());
    };
    if pred.rank() != 0 || pred.dtype() != DType::Bool {
        return Err(format!("the predicate must be a bool scalar, given {pred}"));
    }
    check_subgraph("then", &s.then_branch)?;
    check_subgraph("else", &s.else_branch)?;
    let (ti, to) = signature(&s.then_branch);
    let (ei, eo) = signature(&s.else_branch);
    let ops: Vec<Shape> = operands.iter().map(|&s| s.clone()).collect();
    expect_shapes("then-branch inputs vs operands", &ti, &ops)?;
    expect_shapes("else-branch inputs vs operands", &ei, &ops)?;
    expect_shapes("else-branch outputs vs then-branch outputs", &to, &eo)?;
    tuple_shape(&Op::If(s.clone()))
}

pub(crate) fn infer_while(s: &WhileSpec, inputs: &[&Shape]) -> InferResult {
    check_subgraph("cond", &s.cond)?;
    check_subgraph("body", &s.body)?;
    let carry: Vec<Shape> = inputs.iter().map(|&s| s.clone()).collect();
    let (ci, co) = signature(&s.cond);
    let (bi, bo) = signature(&s.body);
    expect_shapes("cond inputs vs initial carry", &ci, &carry)?;
    expect_shapes("body inputs vs initial carry", &bi, &carry)?;
    expect_shapes("body outputs vs carry", &bo, &carry)?;
    expect_shapes("cond outputs", &[Shape::scalar(DType::Bool)], &co)?;
    if s.max_iterations == 0 {
        return Err("max_iterations must be at least 1".into());
    }
    tuple_shape(&Op::While(s.clone()))
}

pub(crate) fn infer_scan(s: &ScanSpec, inputs: &[&Shape]) -> InferResult {
    check_subgraph("body", &s.body)?;
    if s.num_carry > inputs.len() {
        return Err(format!(
            "num_carry {} exceeds the {} operands",
            s.num_carry,
            inputs.len()
        ));
    }
    let (bi, bo) = signature(&s.body);
    let mut want = Vec::with_capacity(inputs.len());
    for (i, x) in inputs.iter().enumerate() {
        if i < s.num_carry {
            want.push((*x).clone());
            continue;
        }
        match x.dims().first().and_then(|d| d.as_static()) {
            Some(n) if n == s.length => {
                want.push(Shape::from_dims(x.dims()[1..].to_vec(), x.dtype()));
            }
            _ => {
                return Err(format!(
                    "scanned operand {} is {x}; its leading dim must be the length {}",
                    i - s.num_carry,
                    s.length
                ))
            }
        }
    }
    expect_shapes("body inputs vs (carry, x_t)", &bi, &want)?;
    if bo.len() < s.num_carry {
        return Err(format!(
            "the body has {} outputs, fewer than num_carry {}",
            bo.len(),
            s.num_carry
        ));
    }
    expect_shapes(
        "body carry outputs vs carry",
        &bo[..s.num_carry],
        &want[..s.num_carry],
    )?;
    if s.checkpoint == Some(0) {
        return Err(format!(
            "checkpoint segment 0 must be positive (the length is {})",
            s.length
        ));
    }
    tuple_shape(&Op::Scan(s.clone()))
}

pub(crate) fn infer_custom_fn(s: &CustomFnSpec, inputs: &[&Shape]) -> InferResult {
    check_subgraph("body", &s.body)?;
    let ops: Vec<Shape> = inputs.iter().map(|&s| s.clone()).collect();
    let (bi, bo) = signature(&s.body);
    expect_shapes("body inputs vs operands", &bi, &ops)?;
    if let Some(v) = &s.vjp {
        check_subgraph("vjp", v)?;
        let (vi, vo) = signature(v);
        let mut want = ops.clone();
        want.extend(bo.iter().cloned());
        expect_shapes("vjp inputs vs (operands, cotangents)", &vi, &want)?;
        expect_shapes("vjp outputs vs operands", &vo, &ops)?;
    }
    if let Some(j) = &s.jvp {
        check_subgraph("jvp", j)?;
        let (ji, jo) = signature(j);
        let mut want = ops.clone();
        want.extend(ops.iter().cloned());
        expect_shapes("jvp inputs vs (operands, tangents)", &ji, &want)?;
        expect_shapes("jvp outputs vs results", &jo, &bo)?;
    }
    tuple_shape(&Op::CustomFn(s.clone()))
}

pub(crate) fn infer_tuple_get(offset: usize, shape: &Shape, inputs: &[&Shape]) -> InferResult {
    super::arity(inputs, 1, 1)?;
    let t = inputs[0];
    let len = shape
        .size_bytes()
        .ok_or_else(|| format!("result shape {shape} must be static"))?;
    match t.dims() {
        [n] if t.dtype() == DType::U8 && n.as_static().is_some_and(|n| offset + len <= n) => {
            Ok(shape.clone())
        }
        _ => Err(format!(
            "reads {len} bytes at offset {offset} of a tuple, given {t}"
        )),
    }
}

/// Graph-level check of a `TupleGet` node: its input is a tuple op whose
/// result `index` has this offset and shape.
pub(crate) fn check_tuple_get(g: &Graph, id: NodeId) -> Option<String> {
    let n = g.node(id);
    let Op::TupleGet {
        index,
        offset,
        shape,
    } = &n.op
    else {
        return None;
    };
    let src = g.get(*n.inputs.first()?)?;
    if matches!(src.op, Op::Constant { .. }) && src.shape.dtype() == DType::U8 {
        // A tuple folded to its bytes at compile time (`infer_tuple_get` checks the bounds).
        return None;
    }
    let Some(shapes) = result_shapes(&src.op) else {
        return Some(format!(
            "{}: input is {}, not a tuple op",
            n.op.mnemonic(),
            src.op.mnemonic()
        ));
    };
    let (offsets, _) = tuple_layout(&shapes);
    match (shapes.get(*index), offsets.get(*index)) {
        (Some(s), Some(o)) if s == shape && o == offset => None,
        _ => Some(format!(
            "{}: the tuple's results are {}",
            n.op.mnemonic(),
            fmt_shapes(&shapes)
        )),
    }
}

/// The node reading result `index` of the tuple node `tuple`.
pub fn try_tuple_get(g: &mut Graph, tuple: NodeId, index: usize) -> Result<NodeId, IrError> {
    let op = &g
        .get(tuple)
        .ok_or_else(|| IrError::invalid("tuple_get", format!("{tuple} does not exist")))?
        .op;
    let shapes = result_shapes(op).ok_or_else(|| {
        IrError::invalid("tuple_get", format!("{tuple} ({op}) is not a tuple op"))
    })?;
    let (offsets, _) = tuple_layout(&shapes);
    let (Some(shape), Some(&offset)) = (shapes.get(index), offsets.get(index)) else {
        return Err(IrError::invalid(
            "tuple_get",
            format!("index {index} of a tuple of {} results", shapes.len()),
        ));
    };
    let op = Op::TupleGet {
        index,
        offset,
        shape: shape.clone(),
    };
    g.try_node(op, &[tuple], None)
}

/// Emits the tuple op `op` over `inputs` and one `TupleGet` per result.
pub fn try_tuple_op(g: &mut Graph, op: Op, inputs: &[NodeId]) -> Result<Vec<NodeId>, IrError> {
    let n = result_shapes(&op).map_or(0, |s| s.len());
    let t = g.try_node(op, inputs, None)?;
    (0..n).map(|i| try_tuple_get(g, t, i)).collect()
}

/// `if pred { then(operands) } else { else(operands) }`; returns the results.
pub fn try_if(
    g: &mut Graph,
    pred: NodeId,
    then_branch: Graph,
    else_branch: Graph,
    operands: &[NodeId],
) -> Result<Vec<NodeId>, IrError> {
    let mut ins = vec![pred];
    ins.extend_from_slice(operands);
    let spec = IfSpec {
        then_branch: Arc::new(then_branch),
        else_branch: Arc::new(else_branch),
    };
    try_tuple_op(g, Op::If(spec), &ins)
}

/// `while cond(carry) { carry = body(carry) }`; returns the final carry.
pub fn try_while(
    g: &mut Graph,
    cond: Graph,
    body: Graph,
    init: &[NodeId],
    max_iterations: usize,
) -> Result<Vec<NodeId>, IrError> {
    let spec = WhileSpec {
        cond: Arc::new(cond),
        body: Arc::new(body),
        max_iterations,
    };
    try_tuple_op(g, Op::While(spec), init)
}

/// `jax.lax.scan(body, init, xs)`; returns `(final carry, stacked ys)`.
/// `length` is the leading dim of the xs (taken from the first; required
/// through [`ScanSpec`] when there are no xs).
pub fn try_scan(
    g: &mut Graph,
    body: Graph,
    init: &[NodeId],
    xs: &[NodeId],
    reverse: bool,
) -> Result<(Vec<NodeId>, Vec<NodeId>), IrError> {
    let length = match xs.first() {
        Some(&x) => g
            .get(x)
            .and_then(|n| n.shape.dims().first().and_then(|d| d.as_static()))
            .ok_or_else(|| {
                IrError::invalid(
                    "scan",
                    format!("scanned operand {x} needs a static leading dim"),
                )
            })?,
        None => {
            return Err(IrError::invalid(
                "scan",
                "without scanned operands, build Op::Scan with an explicit length",
            ))
        }
    };
    let spec = ScanSpec {
        body: Arc::new(body),
        num_carry: init.len(),
        length,
        reverse,
        checkpoint: None,
    };
    let mut ins = init.to_vec();
    ins.extend_from_slice(xs);
    let mut r = try_tuple_op(g, Op::Scan(spec), &ins)?;
    let ys = r.split_off(init.len());
    Ok((r, ys))
}

/// A [`CustomFnSpec`] applied to `operands`; returns the results.
pub fn try_custom_fn(
    g: &mut Graph,
    spec: CustomFnSpec,
    operands: &[NodeId],
) -> Result<Vec<NodeId>, IrError> {
    try_tuple_op(g, Op::CustomFn(spec), operands)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{verify_all, GraphExt, Node, NodeOrigin};

    fn unary(name: &str, f: impl FnOnce(&mut Graph, NodeId) -> NodeId) -> Graph {
        let mut g = Graph::new(name);
        let x = g.input("x", Shape::new(&[2], DType::F32));
        let y = f(&mut g, x);
        g.set_outputs(vec![y]);
        g
    }

    #[test]
    fn sub_graphs_print_nested_under_their_node() {
        let mut g = Graph::new("g");
        let p = g.input("p", Shape::scalar(DType::Bool));
        let x = g.input("x", Shape::new(&[2], DType::F32));
        let r = g.if_(
            p,
            unary("neg", |g, x| g.neg(x)),
            unary("id", |_, x| x),
            &[x],
        );
        g.set_outputs(r);
        let want = "\
graph \"g\" {
  %0 = input \"p\" : bool[]
  %1 = input \"x\" : f32[2]
  %2 = if %0, %1 : u8[8]
    then: graph \"neg\" {
        %0 = input \"x\" : f32[2]
        %1 = neg %0 : f32[2]
        return %1
      }
    else: graph \"id\" {
        %0 = input \"x\" : f32[2]
        return %0
      }
  %3 = tuple_get{index=0, offset=0, shape=f32[2]} %2 : f32[2]
  return %3
}";
        assert_eq!(g.to_string(), want);
    }

    #[test]
    fn a_mismatched_branch_is_a_verify_error_naming_the_op() {
        let mut g = Graph::new("g");
        let p = g.input("p", Shape::scalar(DType::Bool));
        let x = g.input("x", Shape::new(&[2], DType::F32));
        let sum = unary("sum", |g, x| g.sum(x, &[0], true));
        let spec = IfSpec {
            then_branch: Arc::new(unary("neg", |g, x| g.neg(x))),
            else_branch: Arc::new(sum),
        };
        // Bypass the builder's check, as a deserialiser or a buggy pass might.
        let t = g.push_verified(Node {
            op: Op::If(spec),
            inputs: vec![p, x],
            shape: Shape::new(&[8], DType::U8),
            name: None,
            origin: NodeOrigin::User,
        });
        g.set_outputs(vec![t]);
        let errs = verify_all(&g);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(
            errs[0].to_string(),
            "%2: if: else-branch outputs vs then-branch outputs: expected (f32[2]), given (f32[1])"
        );
    }

    /// `h' = h + x_t` over `xs [7, 2]` with the checkpoint segment `k`.
    fn scan7(k: Option<usize>) -> Result<Graph, String> {
        let mut body = Graph::new("step");
        let h = body.input("h", Shape::new(&[2], DType::F32));
        let x = body.input("x_t", Shape::new(&[2], DType::F32));
        let h2 = body.add(h, x);
        body.set_outputs(vec![h2]);
        let mut g = Graph::new("g");
        let h0 = g.input("h0", Shape::new(&[2], DType::F32));
        let xs = g.input("xs", Shape::new(&[7, 2], DType::F32));
        let spec = ScanSpec {
            body: Arc::new(body),
            num_carry: 1,
            length: 7,
            reverse: false,
            checkpoint: k,
        };
        let r = try_tuple_op(&mut g, Op::Scan(spec), &[h0, xs]).map_err(|e| e.to_string())?;
        g.set_outputs(r);
        Ok(g)
    }

    #[test]
    fn any_positive_checkpoint_segment_verifies_and_round_trips_but_zero_does_not() {
        // 3 and 4 do not divide 7 (the last segment is shorter); 7 and 9
        // mean no checkpointing.
        for k in [1, 3, 4, 6, 7, 9] {
            let g = scan7(Some(k)).unwrap_or_else(|e| panic!("k = {k}: {e}"));
            assert!(verify_all(&g).is_empty(), "k = {k}: {:?}", verify_all(&g));
            let text = g.to_string();
            assert!(text.contains(&format!("checkpoint=Some({k})")), "{text}");
            let back = crate::parse_graph(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back.to_string(), text);
        }
        let e = scan7(Some(0)).unwrap_err();
        assert!(e.contains("checkpoint segment 0 must be positive"), "{e}");
    }
}
