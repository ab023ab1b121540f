//! Eager mode (feature `eval`): tensors made outside any scope live in a
//! per-thread eager scope and evaluate on demand, through the compiler,
//! with a per-thread cache of compiled sub-graphs keyed by their structure.

use crate::error::{Result, TensorError};
use crate::scope::{ScopeData, ScopeOptions};
use crate::tensor::Tensor;
use rlx_ir::{Graph, HostTensor, NodeId, Op};
use rlx_runtime::{CompiledGraph, Device, Session};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

thread_local! {
    static EAGER: RefCell<Option<Rc<ScopeData>>> = const { RefCell::new(None) };
    static CACHE: RefCell<HashMap<String, CompiledGraph>> = RefCell::new(HashMap::new());
    static STATS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The thread's eager scope.
pub(crate) fn scope() -> Rc<ScopeData> {
    EAGER.with(|e| {
        e.borrow_mut()
            .get_or_insert_with(|| ScopeData::new(ScopeOptions::named("eager"), false, None))
            .clone()
    })
}

/// Starts a new eager graph (the old one's memory is freed once its tensors
/// are dropped; using them afterwards is a [`TensorError::ForeignScope`]).
/// The compiled cache is kept.
pub fn reset_eager() {
    EAGER.with(|e| *e.borrow_mut() = None);
}

/// `(compiles, cache hits)` of eager evaluation on this thread.
pub fn eager_cache_stats() -> (usize, usize) {
    STATS.with(|s| s.get())
}

impl Tensor {
    /// Evaluates the tensor (it must depend on constants only).
    pub fn to_host(&self) -> Result<HostTensor> {
        let (scope, id, _) = self.parts()?;
        let (sub, feeds) = extract(&scope.graph.borrow(), id)?;
        let key = sub.to_text();
        let refs: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let run = |c: &mut CompiledGraph| {
            c.try_run_typed(&refs)
                .map_err(|source| TensorError::Runtime {
                    what: "eager run".into(),
                    source: Box::new(source),
                })
        };
        let cached = CACHE.with(|c| c.borrow_mut().get_mut(&key).map(run));
        let out = match cached {
            Some(r) => {
                STATS.with(|s| s.set((s.get().0, s.get().1 + 1)));
                r?
            }
            None => {
                let mut c = Session::new(Device::Cpu)
                    .try_compile(sub)
                    .map_err(|source| TensorError::Runtime {
                        what: "eager compile".into(),
                        source: Box::new(source),
                    })?;
                let r = run(&mut c)?;
                STATS.with(|s| s.set((s.get().0 + 1, s.get().1)));
                CACHE.with(|cache| cache.borrow_mut().insert(key, c));
                r
            }
        };
        out.into_iter()
            .next()
            .ok_or_else(|| TensorError::invalid("to_host", "the compiled graph returned nothing"))
    }

    /// The values as `f32` (row-major).
    ///
    /// ```
    /// use rlx_tensor::{nn, Tensor};
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]);
    /// let b = (&a * 2.0 - 1.0).relu();
    /// assert_eq!(b.to_vec().unwrap(), vec![1.0, 3.0, 5.0]);
    /// assert_eq!(b.sum(None, false).item().unwrap(), 9.0);
    /// let p = nn::softmax(&Tensor::from_vec(vec![0.0, 0.0], &[2]), -1);
    /// assert_eq!(p.to_vec().unwrap(), vec![0.5, 0.5]);
    /// ```
    pub fn to_vec(&self) -> Result<Vec<f32>> {
        Ok(self
            .to_host()?
            .to_f64_lossy()
            .into_iter()
            .map(|v| v as f32)
            .collect())
    }

    /// The one value of a single-element tensor.
    pub fn item(&self) -> Result<f32> {
        let v = self.to_vec()?;
        match v.as_slice() {
            [x] => Ok(*x),
            _ => Err(TensorError::invalid(
                "item",
                format!(
                    "needs exactly one element, the tensor has shape {}",
                    self.shape()
                ),
            )),
        }
    }
}

/// The sub-graph computing `out`, its constants turned into inputs (so the
/// structure, not the data, keys the cache), and the values to feed them.
fn extract(g: &Graph, out: NodeId) -> Result<(Graph, Vec<(String, HostTensor)>)> {
    // Walk back from `out` only: the eager graph keeps every tensor made
    // on the thread, so a scan of all nodes up to `out` would make each
    // evaluation cost the whole history.
    let mut needed = vec![out.index()];
    let mut seen: HashSet<usize> = HashSet::from([out.index()]);
    let mut stack = vec![out];
    while let Some(id) = stack.pop() {
        for inp in &g.node(id).inputs {
            if seen.insert(inp.index()) {
                needed.push(inp.index());
                stack.push(*inp);
            }
        }
    }
    needed.sort_unstable();
    let mut sub = Graph::new("eager");
    let mut map: HashMap<usize, NodeId> = HashMap::new();
    let mut feeds = Vec::new();
    let ir = |e| TensorError::ir("to_host", e);
    for i in needed {
        let node = g.node(NodeId(i as u32));
        let id = match &node.op {
            Op::Constant { bytes } => {
                let name = format!("c{}", feeds.len());
                let dims = node.shape.static_dims().unwrap_or_default();
                let t = HostTensor::from_bytes(node.shape.dtype(), &dims, bytes.to_vec()).map_err(ir)?;
                feeds.push((name.clone(), t));
                sub.try_input(&name, node.shape.clone()).map_err(ir)?
            }
            Op::Input { name } | Op::Param { name } => {
                return Err(TensorError::invalid(
                    "to_host",
                    format!("the value depends on the graph input \"{name}\"; only tensors computed from constants evaluate eagerly"),
                ))
            }
            op => {
                let ins: Vec<NodeId> = node.inputs.iter().map(|x| map[&x.index()]).collect();
                sub.try_node(op.clone(), &ins, Some(node.shape.clone())).map_err(ir)?
            }
        };
        map.insert(i, id);
    }
    sub.set_outputs(vec![map[&out.index()]]);
    Ok((sub, feeds))
}
