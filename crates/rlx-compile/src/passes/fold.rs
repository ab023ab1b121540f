//! Constant folding: every node whose inputs are all constants (directly or
//! through other foldable nodes) is computed once at compile time and
//! replaced by a constant.
//!
//! The compiler has no kernels of its own (backends depend on it, not the
//! other way round), so the values come from a [`ConstEvaluator`] the caller
//! supplies — the runtime runs the constant sub-graph on the CPU backend.
//! The folded values are therefore exactly what the kernels would have
//! computed at run time. Results larger than [`FoldOptions::max_bytes`] are
//! not folded: a broadcast of a scalar to a big tensor is cheaper to compute
//! than to store.

use crate::CompileError;
use rlx_ir::{Graph, HostTensor, NodeId, NodeOrigin, Op};

/// The error of a [`ConstEvaluator`]: whatever its lowering, backend or
/// run raised, kept whole as the source of [`CompileError::FoldEval`].
pub type ConstEvalError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Runs a graph whose only leaves are constants and returns its outputs.
pub trait ConstEvaluator {
    /// Evaluates `g` (no inputs, no params); one tensor per output.
    fn evaluate(&self, g: &Graph) -> Result<Vec<HostTensor>, ConstEvalError>;
}

/// Limits of [`fold_constants`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoldOptions {
    /// Largest folded result, in bytes.
    pub max_bytes: usize,
}

impl Default for FoldOptions {
    fn default() -> Self {
        FoldOptions { max_bytes: 1 << 20 }
    }
}

/// Folds every constant sub-expression of `g` through `eval`.
pub fn fold_constants(
    g: &Graph,
    eval: &dyn ConstEvaluator,
    opts: FoldOptions,
) -> Result<Graph, CompileError> {
    let foldable = foldable_nodes(g, opts);
    let mut needed = vec![false; g.len()];
    for id in g.ids() {
        let n = g.node(id);
        if !foldable[id.index()] {
            for &i in &n.inputs {
                needed[i.index()] |= foldable[i.index()] && !g.node(i).op.is_leaf();
            }
        }
    }
    for &o in g.outputs() {
        needed[o.index()] |= foldable[o.index()] && !g.node(o).op.is_leaf();
    }
    let targets: Vec<NodeId> = g.ids().filter(|i| needed[i.index()]).collect();
    if targets.is_empty() {
        return Ok(g.clone());
    }
    let values = evaluate_targets(g, &foldable, &targets, eval)?;

    let mut out = Graph::new(g.name());
    let mut map = vec![NodeId(u32::MAX); g.len()];
    let mut next_value = values.into_iter();
    for id in g.ids() {
        let n = g.node(id);
        if needed[id.index()] {
            let t = next_value.next().expect("one value per target");
            let c = out.constant_tensor(&t);
            out.set_origin(
                c,
                NodeOrigin::Pass {
                    name: "fold".into(),
                },
            );
            if let Some(name) = &n.name {
                out.set_name(c, name.clone());
            }
            map[id.index()] = c;
        } else if !foldable[id.index()] || n.op.is_leaf() {
            let mut node = n.clone();
            node.inputs = n.inputs.iter().map(|i| map[i.index()]).collect();
            map[id.index()] = out.push_verified(node);
        }
        // Other foldable nodes only feed folded nodes: nothing refers to them.
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}

/// Constants, and non-leaf nodes with static, small results whose inputs are all foldable.
fn foldable_nodes(g: &Graph, opts: FoldOptions) -> Vec<bool> {
    let mut foldable = vec![false; g.len()];
    for id in g.ids() {
        let n = g.node(id);
        foldable[id.index()] = match n.op {
            Op::Constant { .. } => true,
            Op::Input { .. } | Op::Param { .. } => false,
            _ => {
                !n.inputs.is_empty()
                    && n.inputs.iter().all(|i| foldable[i.index()])
                    && n.shape.size_bytes().is_some_and(|b| b <= opts.max_bytes)
            }
        };
    }
    foldable
}

/// Copies the foldable part of `g` into a graph whose outputs are `targets` and runs it.
fn evaluate_targets(
    g: &Graph,
    foldable: &[bool],
    targets: &[NodeId],
    eval: &dyn ConstEvaluator,
) -> Result<Vec<HostTensor>, CompileError> {
    let mut sub = Graph::new(format!("{}.fold", g.name()));
    let mut map = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids().filter(|i| foldable[i.index()]) {
        let mut node = g.node(id).clone();
        node.inputs = node.inputs.iter().map(|i| map[i.index()]).collect();
        map[id.index()] = sub.push_verified(node);
    }
    sub.set_outputs(targets.iter().map(|t| map[t.index()]).collect());
    let values = eval
        .evaluate(&sub)
        .map_err(|source| CompileError::FoldEval {
            graph: g.name().to_string(),
            source: rlx_ir::ErrorSource::from_boxed(source),
        })?;
    if values.len() != targets.len() {
        return Err(CompileError::Fold {
            graph: g.name().to_string(),
            reason: format!(
                "the evaluator returned {} values for {} folded nodes",
                values.len(),
                targets.len()
            ),
        });
    }
    for (t, v) in targets.iter().zip(&values) {
        if Some(v.shape()) != Some(g.shape(*t).clone()) {
            return Err(CompileError::Fold {
                graph: g.name().to_string(),
                reason: format!(
                    "node {t} folded to {} but its shape is {}",
                    v.shape(),
                    g.shape(*t)
                ),
            });
        }
    }
    Ok(values)
}
