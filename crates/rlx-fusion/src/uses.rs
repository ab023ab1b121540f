//! Who reads what: the reader lists and output flags every pattern pass
//! consults, and the small emit helpers they share.

use rlx_ir::{Graph, IrError, NodeId, NodeOrigin, Op, Shape};

/// Readers and output flags of every node of a graph.
pub(crate) struct Uses {
    readers: Vec<Vec<NodeId>>,
    is_output: Vec<bool>,
}

impl Uses {
    pub(crate) fn of(g: &Graph) -> Uses {
        let mut readers: Vec<Vec<NodeId>> = vec![Vec::new(); g.len()];
        for id in g.ids() {
            for &i in &g.node(id).inputs {
                if readers[i.index()].last() != Some(&id) {
                    readers[i.index()].push(id);
                }
            }
        }
        let mut is_output = vec![false; g.len()];
        for &o in g.outputs() {
            is_output[o.index()] = true;
        }
        Uses { readers, is_output }
    }

    /// The distinct nodes that read `id`, in id order.
    pub(crate) fn readers(&self, id: NodeId) -> &[NodeId] {
        &self.readers[id.index()]
    }

    /// True when `id` is a graph output.
    pub(crate) fn is_output(&self, id: NodeId) -> bool {
        self.is_output[id.index()]
    }

    /// True when `consumer` is the only reader of `id` and `id` is not an output.
    pub(crate) fn only_read_by(&self, id: NodeId, consumer: NodeId) -> bool {
        !self.is_output(id) && self.readers(id) == [consumer]
    }
}

/// The value of a scalar (one-element) float constant.
pub(crate) fn scalar_value(g: &Graph, c: NodeId) -> Option<f64> {
    let n = g.node(c);
    let Op::Constant { bytes } = &n.op else {
        return None;
    };
    let dims = n.shape.static_dims()?;
    if dims.iter().product::<usize>() != 1 || !n.shape.dtype().is_float() {
        return None;
    }
    let t = rlx_ir::HostTensor::from_bytes(n.shape.dtype(), &dims, bytes.to_vec()).ok()?;
    t.to_f64_lossy().first().copied()
}

/// Copies node `id` of `g` into `out` with its inputs mapped.
pub(crate) fn copy(out: &mut Graph, g: &Graph, id: NodeId, map: &[NodeId]) -> NodeId {
    let n = g.node(id);
    let mut node = n.clone();
    node.inputs = n.inputs.iter().map(|i| map[i.index()]).collect();
    out.push_verified(node)
}

/// Emits a fused node, marked as made by fusion and named like `named_as`.
pub(crate) fn emit_fused(
    out: &mut Graph,
    g: &Graph,
    named_as: NodeId,
    op: Op,
    inputs: &[NodeId],
    declared: Option<Shape>,
) -> Result<NodeId, IrError> {
    let id = out.try_node(op, inputs, declared)?;
    out.set_origin(
        id,
        NodeOrigin::Pass {
            name: "fusion".into(),
        },
    );
    if let Some(name) = &g.node(named_as).name {
        out.set_name(id, name.clone());
    }
    Ok(id)
}

/// `x[lo..hi]` along axis 0, reshaped to `dims`: a view of a stacked result.
pub(crate) fn unstack(
    out: &mut Graph,
    x: NodeId,
    index: usize,
    shape: &Shape,
) -> Result<NodeId, IrError> {
    let s = out.shape(x).clone();
    let mut starts = vec![0; s.rank()];
    starts[0] = index;
    let mut dims = s.dims().to_vec();
    dims[0] = 1usize.into();
    let one = out.try_node(
        Op::Slice(rlx_ir::op::SliceSpec {
            starts,
            steps: vec![1; s.rank()],
        }),
        &[x],
        Some(Shape::from_dims(dims, s.dtype())),
    )?;
    out.try_node(Op::Reshape, &[one], Some(shape.clone()))
}

/// Rebuilds `g` with fused replacements. Plan `k` is `(at, absorbed)`: at
/// old node `at`, `emit(out, k, map)` writes the replacement and maps the
/// old nodes it stands for; the `absorbed` old nodes are not copied.
/// Every other node is copied with its inputs mapped.
pub(crate) fn rebuild(
    g: &Graph,
    plans: impl IntoIterator<Item = (NodeId, Vec<NodeId>)>,
    mut emit: impl FnMut(&mut Graph, usize, &mut [NodeId]) -> Result<(), IrError>,
) -> Result<Graph, IrError> {
    let mut plan_at: Vec<Option<usize>> = vec![None; g.len()];
    let mut skip = vec![false; g.len()];
    for (k, (at, absorbed)) in plans.into_iter().enumerate() {
        plan_at[at.index()] = Some(k);
        for m in absorbed {
            skip[m.index()] = true;
        }
    }
    let mut out = Graph::new(g.name());
    let mut map = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids() {
        if let Some(k) = plan_at[id.index()] {
            emit(&mut out, k, &mut map)?;
        } else if !skip[id.index()] {
            map[id.index()] = copy(&mut out, g, id, &map);
        }
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}
