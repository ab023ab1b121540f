//! ONNX graph -> RLX [`Graph`].
//!
//! Nodes are visited in a topological order (checked: a cycle or a dangling
//! name is an error). Each op type has an importer in one of the family
//! modules; a node whose inputs are all constants is folded at import (the
//! importer runs on a scratch graph of constants, compiled and run on the
//! CPU backend), so shape subgraphs (`Shape -> Gather -> Concat -> Reshape`)
//! become constants whenever the input shapes are known. Unsupported op
//! types are reported all at once before anything is built.

/// Declares a family's op table: `OPS` (the names) and `lookup` (name -> importer).
macro_rules! op_table {
    ($($name:literal => $f:expr),* $(,)?) => {
        pub(super) const OPS: &[&str] = &[$($name),*];
        pub(super) fn lookup(op: &str) -> Option<super::ImportFn> {
            let f: super::ImportFn = match op {
                $($name => $f,)*
                _ => return None,
            };
            Some(f)
        }
    };
}

mod attention;
mod attrs;
mod cast;
mod conv_bn;
mod elementwise;
mod grid_sample;
mod indexing;
mod linalg;
mod loss;
mod math;
mod movement;
mod nn;
mod norm;
mod quant;
mod recurrent;
mod reduce;
mod resize;
mod schema_table;
mod symbolic;
pub mod validate;

pub(crate) use attrs::{check_size, NodeCx};

use crate::model::{tensor_info, TensorInfo};
use crate::proto::{GraphProto, ModelProto, NodeProto};
use crate::tensor::tensor_from_proto;
use crate::{OnnxError, Result, UnsupportedNode};
use rlx_ir::{Dim, Graph, HostTensor, NodeId, Op, Shape};
use rlx_runtime::Session;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

/// What the importer produces.
#[derive(Debug)]
pub struct Imported {
    /// The RLX graph (outputs in ONNX output order).
    pub graph: Graph,
    /// Graph inputs (initializers excluded), in ONNX order.
    pub inputs: Vec<TensorInfo>,
    /// Graph outputs with the dims RLX inferred.
    pub outputs: Vec<TensorInfo>,
    /// ONNX op type -> node count.
    pub op_counts: BTreeMap<String, usize>,
    /// Nodes folded to constants at import.
    pub folded: usize,
}

/// How to import.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Sizes for symbolic input dims (`dim_param` names, or `<input>:<axis>`).
    pub dim_bindings: HashMap<String, usize>,
    /// Graph inputs imported as these constant values instead (used to
    /// specialise on inputs a shape computation needs).
    pub input_values: HashMap<String, HostTensor>,
}

/// The largest folded constant, in bytes; bigger results stay in the graph.
const MAX_FOLD_BYTES: usize = 64 << 20;

/// A value of the ONNX graph: its node, and its data when known at import.
#[derive(Clone, Debug)]
pub(crate) struct Value {
    pub node: NodeId,
    pub konst: Option<Rc<HostTensor>>,
    /// The ONNX element type when it is a narrow one (see [`crate::narrow`]).
    pub tag: Option<i32>,
    /// A shape value over symbolic dims (see [`symbolic`]); `node` is then a placeholder.
    pub sym: Option<Rc<symbolic::SymShape>>,
}

fn narrow_tag(elem_type: i32) -> Option<i32> {
    crate::narrow::is_tracked(elem_type).then_some(elem_type)
}

/// Ops that only move data: a narrow input type carries to every output.
const PASS_THROUGH: &[&str] = &[
    "Identity",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "Expand",
    "Tile",
    "Dropout",
];

/// Ops that understand narrow types themselves.
const NARROW_AWARE: &[&str] = &[
    "Cast",
    "CastLike",
    "QuantizeLinear",
    "DequantizeLinear",
    "Shape",
    "Size",
];

/// An importer: reads the node's inputs / attributes from the context and
/// returns one node per ONNX output it produces.
pub(crate) type ImportFn = fn(&mut NodeCx) -> Result<Vec<NodeId>>;

/// The importer of an op type of the default domain.
pub(crate) fn importer(op_type: &str) -> Option<ImportFn> {
    elementwise::lookup(op_type)
        .or_else(|| attention::lookup(op_type))
        .or_else(|| cast::lookup(op_type))
        .or_else(|| grid_sample::lookup(op_type))
        .or_else(|| linalg::lookup(op_type))
        .or_else(|| loss::lookup(op_type))
        .or_else(|| math::lookup(op_type))
        .or_else(|| nn::lookup(op_type))
        .or_else(|| norm::lookup(op_type))
        .or_else(|| reduce::lookup(op_type))
        .or_else(|| movement::lookup(op_type))
        .or_else(|| indexing::lookup(op_type))
        .or_else(|| quant::lookup(op_type))
        .or_else(|| recurrent::lookup(op_type))
        .or_else(|| resize::lookup(op_type))
}

/// Every op type of the default domain the importer knows (sorted; `If`
/// needs a condition known at import).
pub fn supported_ops() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = [
        elementwise::OPS,
        attention::OPS,
        cast::OPS,
        grid_sample::OPS,
        linalg::OPS,
        loss::OPS,
        math::OPS,
        nn::OPS,
        norm::OPS,
        reduce::OPS,
        movement::OPS,
        indexing::OPS,
        quant::OPS,
        recurrent::OPS,
        resize::OPS,
    ]
    .concat();
    all.push("If");
    all.sort_unstable();
    all
}

pub(crate) fn node_label(n: &NodeProto, index: usize) -> String {
    match n.name.as_deref() {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => format!("#{index}"),
    }
}

fn is_default_domain(n: &NodeProto) -> bool {
    matches!(n.domain.as_deref(), None | Some("") | Some("ai.onnx"))
}

/// Every node whose op the importer does not know, all at once (the
/// branches of `If` nodes included).
pub fn unsupported_nodes(g: &GraphProto) -> Vec<UnsupportedNode> {
    let mut out = Vec::new();
    for (i, n) in g.node.iter().enumerate() {
        let op = n.op_type.clone().unwrap_or_default();
        if is_default_domain(n) && op == "If" {
            for b in branches(n) {
                out.extend(unsupported_nodes(b));
            }
            continue;
        }
        if is_default_domain(n) && importer(&op).is_some() {
            continue;
        }
        out.push(UnsupportedNode {
            op_type: if is_default_domain(n) {
                op.clone()
            } else {
                format!("{}::{op}", n.domain.as_deref().unwrap_or_default())
            },
            node: node_label(n, i),
            reason: if !is_default_domain(n) {
                "custom-domain ops are not supported".into()
            } else if op == "Loop" || op == "Scan" {
                "control flow with a run-time trip count needs IR while / scan ops".into()
            } else {
                "no importer for this op type".into()
            },
        });
    }
    out
}

/// The subgraphs of a node (`If` branches).
fn branches(n: &NodeProto) -> impl Iterator<Item = &GraphProto> {
    n.attribute.iter().filter_map(|a| a.g.as_ref())
}

/// Every value a node reads: its inputs, and the outer values its subgraphs use.
fn node_reads(n: &NodeProto) -> Vec<String> {
    let mut reads: Vec<String> = n.input.clone();
    for b in branches(n) {
        let mut inner: HashSet<String> = b
            .initializer
            .iter()
            .filter_map(|t| t.name.clone())
            .collect();
        inner.extend(b.input.iter().filter_map(|v| v.name.clone()));
        for m in &b.node {
            for r in node_reads(m) {
                if !r.is_empty() && !inner.contains(&r) {
                    reads.push(r);
                }
            }
            inner.extend(m.output.iter().cloned());
        }
        reads.extend(
            b.output
                .iter()
                .filter_map(|o| o.name.clone())
                .filter(|o| !inner.contains(o)),
        );
    }
    reads
}

/// The model's graph, if its default-domain opset is supported, every
/// node's op type has an importer (else all unsupported nodes at once) and
/// every node matches its operator schema (see [`validate`]).
pub(crate) fn checked_graph(model: &ModelProto) -> Result<&GraphProto> {
    let g = model
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Invalid("the model has no graph".into()))?;
    let unsupported = unsupported_nodes(g);
    if !unsupported.is_empty() {
        return Err(OnnxError::Unsupported(unsupported));
    }
    // Every node left is a default-domain one, which needs that opset.
    if !g.node.is_empty() {
        let opset = validate::model_opset(model)?;
        validate::check_graph(g, opset)?;
    }
    Ok(g)
}

/// Node indices in a topological order; a cycle or an undefined input name is an error.
fn topo_order(g: &GraphProto, known: &HashSet<String>) -> Result<Vec<usize>> {
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (i, n) in g.node.iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            if known.contains(o) || producer.insert(o, i).is_some() {
                return Err(OnnxError::Invalid(format!(
                    "value \"{o}\" is defined twice (node {})",
                    node_label(n, i)
                )));
            }
        }
    }
    let mut indegree = vec![0usize; g.node.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); g.node.len()];
    for (i, n) in g.node.iter().enumerate() {
        for name in node_reads(n).iter().filter(|s| !s.is_empty()) {
            if let Some(&p) = producer.get(name.as_str()) {
                indegree[i] += 1;
                users[p].push(i);
            } else if !known.contains(name) {
                return Err(OnnxError::Invalid(format!(
                    "node {} ({}) reads \"{name}\", which no node, initializer or graph input defines",
                    node_label(n, i),
                    n.op_type.as_deref().unwrap_or_default()
                )));
            }
        }
    }
    let mut ready: Vec<usize> = (0..g.node.len())
        .filter(|&i| indegree[i] == 0)
        .rev()
        .collect();
    let mut order = Vec::with_capacity(g.node.len());
    while let Some(i) = ready.pop() {
        order.push(i);
        for &u in users[i].iter().rev() {
            indegree[u] -= 1;
            if indegree[u] == 0 {
                ready.push(u);
            }
        }
    }
    if order.len() != g.node.len() {
        let stuck: Vec<String> = (0..g.node.len())
            .filter(|&i| indegree[i] > 0)
            .take(8)
            .map(|i| node_label(&g.node[i], i))
            .collect();
        return Err(OnnxError::Invalid(format!(
            "the graph has a cycle through nodes {stuck:?}"
        )));
    }
    Ok(order)
}

/// Counters kept while importing.
#[derive(Default)]
struct Stats {
    op_counts: BTreeMap<String, usize>,
    folded: usize,
}

/// Imports the nodes of `g` (the main graph or a taken `If` branch) into `out`.
fn import_nodes(
    out: &mut Graph,
    g: &GraphProto,
    values: &mut HashMap<String, Value>,
    opset: i64,
    stats: &mut Stats,
) -> Result<()> {
    let known: HashSet<String> = values.keys().cloned().collect();
    let order = topo_order(g, &known)?;
    for i in order {
        let n = &g.node[i];
        *stats
            .op_counts
            .entry(n.op_type.clone().unwrap_or_default())
            .or_insert(0) += 1;
        if n.op_type.as_deref() == Some("If") {
            inline_if(out, n, i, values, opset, stats)?;
            continue;
        }
        let f = importer(n.op_type.as_deref().unwrap_or_default()).expect("pre-scanned");
        let ins: Vec<Option<Value>> = n
            .input
            .iter()
            .map(|s| (!s.is_empty()).then(|| values[s.as_str()].clone()))
            .collect();
        let (produced, was_folded) = import_node(out, n, i, opset, &ins, f)?;
        stats.folded += was_folded as usize;
        for (k, oname) in n.output.iter().enumerate().filter(|(_, o)| !o.is_empty()) {
            let v = produced
                .get(k)
                .cloned()
                .flatten()
                .ok_or_else(|| OnnxError::Node {
                    node: node_label(n, i),
                    op_type: n.op_type.clone().unwrap_or_default(),
                    reason: format!("output {k} (\"{oname}\") is not supported"),
                })?;
            out.set_name(v.node, oname.clone());
            values.insert(oname.clone(), v);
        }
    }
    Ok(())
}

/// `If` with a condition known at import: the taken branch is imported in
/// place (its nodes see the outer values), its outputs become the node's.
fn inline_if(
    out: &mut Graph,
    n: &NodeProto,
    index: usize,
    values: &mut HashMap<String, Value>,
    opset: i64,
    stats: &mut Stats,
) -> Result<()> {
    let cond_name = n.input.first().cloned().unwrap_or_default();
    let cond = values
        .get(&cond_name)
        .and_then(|v| v.konst.clone())
        .ok_or_else(|| OnnxError::NeedsValue {
            value: cond_name.clone(),
            node: node_label(n, index),
            what: "If condition".into(),
        })?;
    let taken = if cond.to_f64_lossy().first().copied().unwrap_or(0.0) != 0.0 {
        "then_branch"
    } else {
        "else_branch"
    };
    let branch = n
        .attribute
        .iter()
        .find(|a| a.name.as_deref() == Some(taken))
        .and_then(|a| a.g.as_ref())
        .ok_or_else(|| {
            OnnxError::Invalid(format!("If node {} has no {taken}", node_label(n, index)))
        })?;
    for t in &branch.initializer {
        let host = tensor_from_proto(t, None)?;
        let node = out.constant_tensor(&host);
        let name = t.name.clone().unwrap_or_default();
        values.insert(
            name,
            Value {
                node,
                konst: Some(Rc::new(host)),
                tag: narrow_tag(t.data_type.unwrap_or(0)),
                sym: None,
            },
        );
    }
    import_nodes(out, branch, values, opset, stats)?;
    for (k, oname) in n.output.iter().enumerate().filter(|(_, o)| !o.is_empty()) {
        let inner = branch
            .output
            .get(k)
            .and_then(|o| o.name.clone())
            .unwrap_or_default();
        let v = values.get(&inner).cloned().ok_or_else(|| {
            OnnxError::Invalid(format!("If branch output \"{inner}\" is never defined"))
        })?;
        values.insert(oname.clone(), v);
    }
    Ok(())
}

/// Imports a model's main graph.
pub fn import_model(
    model: &ModelProto,
    base_dir: Option<&Path>,
    opts: &ImportOptions,
) -> Result<Imported> {
    let g = checked_graph(model)?;
    let opset = crate::model::model_info(model).default_opset();
    let name = g.name.clone().unwrap_or_else(|| "onnx".into());
    let mut out = Graph::new(name);
    let mut values: HashMap<String, Value> = HashMap::new();

    for t in &g.initializer {
        let name = t.name.clone().unwrap_or_default();
        let host = tensor_from_proto(t, base_dir)?;
        let node = out.constant_tensor(&host);
        if values
            .insert(
                name.clone(),
                Value {
                    node,
                    konst: Some(Rc::new(host)),
                    tag: narrow_tag(t.data_type.unwrap_or(0)),
                    sym: None,
                },
            )
            .is_some()
        {
            return Err(OnnxError::Invalid(format!(
                "initializer \"{name}\" is defined twice"
            )));
        }
    }
    let mut inputs = Vec::new();
    for v in &g.input {
        let vname = v.name.clone().unwrap_or_default();
        if values.contains_key(&vname) {
            continue; // an initializer listed as an input: its value is the default
        }
        let mut info = tensor_info(v)?;
        info.dims = info
            .dims
            .iter()
            .map(|d| d.bind(&opts.dim_bindings))
            .collect();
        let node = if let Some(t) = opts.input_values.get(&vname) {
            if t.dtype() != info.dtype || !dims_match(&info.dims, t.dims()) {
                return Err(OnnxError::Invalid(format!(
                    "value for input \"{vname}\" is {:?} {:?}, the input is {} {:?}",
                    t.dtype(),
                    t.dims(),
                    info.dtype,
                    info.dims
                )));
            }
            let node = out.constant_tensor(t);
            values.insert(
                vname.clone(),
                Value {
                    node,
                    konst: Some(Rc::new(t.clone())),
                    tag: narrow_tag(info.elem_type),
                    sym: None,
                },
            );
            node
        } else {
            let node = out.try_input(&vname, Shape::from_dims(info.dims.clone(), info.dtype))?;
            values.insert(
                vname.clone(),
                Value {
                    node,
                    konst: None,
                    tag: narrow_tag(info.elem_type),
                    sym: None,
                },
            );
            node
        };
        let _ = node;
        inputs.push(info);
    }

    let mut stats = Stats::default();
    import_nodes(&mut out, g, &mut values, opset, &mut stats)?;
    let Stats { op_counts, folded } = stats;

    let mut outs = Vec::new();
    let mut out_infos = Vec::new();
    for v in &g.output {
        let vname = v.name.clone().unwrap_or_default();
        let val = values.get(&vname).ok_or_else(|| {
            OnnxError::Invalid(format!("graph output \"{vname}\" is never defined"))
        })?;
        let mut id = val.node;
        let mut elem_type = val
            .tag
            .unwrap_or(crate::tensor::elem_type_of(out.shape(id).dtype()));
        // Cast to the declared element type when the IR computed another.
        if let Ok(declared) = tensor_info(v) {
            elem_type = declared.elem_type;
            if declared.dtype != out.shape(id).dtype() {
                let s = out.shape(id).with_dtype(declared.dtype);
                id = out.try_node(Op::Cast, &[id], Some(s))?;
            }
        }
        let s = out.shape(id).clone();
        out_infos.push(TensorInfo {
            name: vname,
            dtype: s.dtype(),
            elem_type,
            dims: s.dims().to_vec(),
        });
        outs.push(id);
    }
    out.set_outputs(outs);
    Ok(Imported {
        graph: out,
        inputs,
        outputs: out_infos,
        op_counts,
        folded,
    })
}

fn dims_match(dims: &[Dim], given: &[usize]) -> bool {
    dims.len() == given.len()
        && dims
            .iter()
            .zip(given)
            .all(|(d, &g)| d.as_static().is_none_or(|s| s == g))
}

/// Imports one node; folds it to constants when every input is constant.
fn import_node(
    g: &mut Graph,
    n: &NodeProto,
    index: usize,
    opset: i64,
    ins: &[Option<Value>],
    f: ImportFn,
) -> Result<(Vec<Option<Value>>, bool)> {
    let op = n.op_type.as_deref().unwrap_or_default();
    if let Some(t) = ins
        .iter()
        .flatten()
        .find_map(|v| v.tag.filter(|&t| crate::narrow::is_narrow(t)))
    {
        if !PASS_THROUGH.contains(&op) && !NARROW_AWARE.contains(&op) {
            let name = crate::proto::tensor_proto::DataType::try_from(t)
                .map_or("?".into(), |d| d.as_str_name().to_string());
            return Err(OnnxError::Unsupported(vec![UnsupportedNode {
                op_type: op.to_string(),
                node: node_label(n, index),
                reason: format!(
                    "{op} on {name} values: RLX has no {name} dtype (only casts, (de)quantisation and data movement take them)"
                ),
            }]));
        }
    }
    if let Some(shape) = symbolic::eval(g, n, index, ins)? {
        return Ok((vec![Some(symbolic_value(g, shape))], false));
    }
    for (k, v) in ins.iter().enumerate() {
        if let Some(s) = v.as_ref().and_then(|v| v.sym.as_ref()) {
            if !symbolic::CONSUMERS.contains(&(op, k)) {
                return Err(symbolic::needs_binding(n, index, s));
            }
        }
    }
    let free = value_free_inputs(op);
    let all_const = ins
        .iter()
        .enumerate()
        .all(|(k, v)| free.contains(&k) || v.as_ref().is_none_or(|v| v.konst.is_some()));
    let tags_of = |set: Vec<Option<i32>>, k: usize| -> Option<i32> {
        if !set.is_empty() {
            return set.get(k).copied().flatten();
        }
        if PASS_THROUGH.contains(&op) {
            return ins.first().cloned().flatten().and_then(|v| v.tag);
        }
        None
    };
    if all_const {
        if let Some((vals, set)) = fold_node(g, n, index, opset, ins, f)? {
            let out = vals
                .into_iter()
                .enumerate()
                .map(|(k, t)| {
                    let node = g.constant_tensor(&t);
                    Some(Value {
                        node,
                        konst: Some(Rc::new(t)),
                        tag: tags_of(set.clone(), k),
                        sym: None,
                    })
                })
                .collect();
            return Ok((out, true));
        }
    }
    let mut cx = NodeCx::new(g, n, index, opset, ins);
    let ids = run_importer(f, &mut cx)?;
    let set = std::mem::take(&mut cx.out_tags);
    Ok((
        ids.into_iter()
            .enumerate()
            .map(|(k, node)| {
                Some(Value {
                    node,
                    konst: const_of(g, node),
                    tag: tags_of(set.clone(), k),
                    sym: None,
                })
            })
            .collect(),
        false,
    ))
}

/// Runs an importer; a panic (a bug, never expected) becomes an error
/// naming the node instead of unwinding into the caller.
fn run_importer(f: ImportFn, cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(cx))) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(cx.err(format!("internal error while importing: {msg}")))
        }
    }
}

/// A shape value: a constant when every entry is known, else a symbolic
/// value over a placeholder node.
fn symbolic_value(g: &mut Graph, s: symbolic::SymShape) -> Value {
    let known: Option<Vec<i64>> = s
        .items
        .iter()
        .map(|i| match i {
            symbolic::SymInt::Int(v) => Some(*v),
            symbolic::SymInt::Sym(_) => None,
        })
        .collect();
    let dims: Vec<usize> = if s.scalar {
        vec![]
    } else {
        vec![s.items.len()]
    };
    if let Some(v) = known {
        let t = HostTensor::from_vec(v, &dims).expect("shape value");
        return Value {
            node: g.constant_tensor(&t),
            konst: Some(Rc::new(t)),
            tag: None,
            sym: None,
        };
    }
    let placeholder = g.constant_tensor(&HostTensor::zeros(rlx_ir::DType::I64, &dims));
    Value {
        node: placeholder,
        konst: None,
        tag: None,
        sym: Some(Rc::new(s)),
    }
}

/// Inputs whose values an op never reads (only their dtype / dims): a node
/// is still folded when these are run-time values.
fn value_free_inputs(op_type: &str) -> &'static [usize] {
    match op_type {
        "CastLike" => &[1],
        "Shape" | "Size" | "EyeLike" => &[0],
        _ => &[],
    }
}

/// The data of a constant node.
fn const_of(g: &Graph, id: NodeId) -> Option<Rc<HostTensor>> {
    let n = g.node(id);
    match &n.op {
        Op::Constant { bytes } => {
            let dims = n.shape.static_dims()?;
            HostTensor::from_shared(n.shape.dtype(), &dims, bytes.clone())
                .ok()
                .map(Rc::new)
        }
        _ => None,
    }
}

/// Folded outputs and their narrow ONNX types.
type Folded = (Vec<HostTensor>, Vec<Option<i32>>);

/// Evaluates a node of constant inputs on a scratch graph; `None` when the
/// result is too large to keep as a constant.
fn fold_node(
    g: &Graph,
    n: &NodeProto,
    index: usize,
    opset: i64,
    ins: &[Option<Value>],
    f: ImportFn,
) -> Result<Option<Folded>> {
    let mut scratch = Graph::new("fold");
    let mut local: Vec<Option<Value>> = Vec::with_capacity(ins.len());
    for v in ins {
        let Some(v) = v else {
            local.push(None);
            continue;
        };
        // A value-free run-time input stands in as zeros of its shape.
        let t = match &v.konst {
            Some(t) => t.clone(),
            None => {
                let s = g.shape(v.node);
                match s.static_dims().map(|d| (s.dtype(), d)) {
                    Some((dt, dims)) => Rc::new(HostTensor::zeros(dt, &dims)),
                    None => return Ok(None),
                }
            }
        };
        local.push(Some(Value {
            node: scratch.constant_tensor(&t),
            konst: Some(t),
            tag: v.tag,
            sym: None,
        }));
    }
    let mut cx = NodeCx::new(&mut scratch, n, index, opset, &local);
    let ids = run_importer(f, &mut cx)?;
    let tags = std::mem::take(&mut cx.out_tags);
    let mut bytes = 0usize;
    for &id in &ids {
        match scratch.shape(id).size_bytes() {
            Some(b) => bytes = bytes.saturating_add(b),
            None => return Ok(None),
        }
    }
    if bytes > MAX_FOLD_BYTES {
        return Ok(None);
    }
    if let Some(all) = ids
        .iter()
        .map(|&id| const_of(&scratch, id))
        .collect::<Option<Vec<_>>>()
    {
        return Ok(Some((
            all.into_iter().map(|t| (*t).clone()).collect(),
            tags,
        )));
    }
    // Zero-element results need no kernel.
    if ids.iter().all(|&id| scratch.shape(id).numel() == Some(0)) {
        let zeros = ids
            .iter()
            .map(|&id| {
                let s = scratch.shape(id);
                HostTensor::zeros(s.dtype(), &s.static_dims().unwrap_or_default())
            })
            .collect();
        return Ok(Some((zeros, tags)));
    }
    scratch.set_outputs(ids);
    let mut c = Session::new(rlx_driver::Device::Cpu).try_compile(scratch)?;
    Ok(Some((c.try_run_typed(&[])?, tags)))
}
