//! [`DeviceMap`]: which device runs which node.

use crate::DeviceCandidate;
use rlx_ir::{Graph, NodeId};
use std::collections::HashMap;

/// Assigns graph nodes to devices. Precedence: an explicit node, then
/// "split at node k", then the op's mnemonic, then the default.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceMap {
    default: DeviceCandidate,
    split: Option<(NodeId, DeviceCandidate)>,
    by_op: Vec<(String, DeviceCandidate)>,
    nodes: HashMap<NodeId, DeviceCandidate>,
}

impl DeviceMap {
    /// Every node on `default`.
    pub fn new(default: DeviceCandidate) -> Self {
        DeviceMap {
            default,
            split: None,
            by_op: Vec::new(),
            nodes: HashMap::new(),
        }
    }

    /// Nodes before `node` on `before`, `node` and later ones on `after`.
    pub fn split_at(node: NodeId, before: DeviceCandidate, after: DeviceCandidate) -> Self {
        let mut map = Self::new(before);
        map.split = Some((node, after));
        map
    }

    /// Runs every node whose op mnemonic (`matmul`, `tanh`, ... as in the
    /// textual IR, without the `{...}` payload) is `mnemonic` on `device`.
    pub fn op(mut self, mnemonic: impl Into<String>, device: DeviceCandidate) -> Self {
        self.by_op.push((mnemonic.into(), device));
        self
    }

    /// Runs `nodes` on `device`.
    pub fn nodes(mut self, nodes: &[NodeId], device: DeviceCandidate) -> Self {
        for &n in nodes {
            self.nodes.insert(n, device);
        }
        self
    }

    /// The explicitly placed nodes (to check them against a graph).
    pub(crate) fn explicit_nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes
            .keys()
            .copied()
            .chain(self.split.iter().map(|(n, _)| *n))
    }

    /// The device of node `id` of `graph`.
    pub fn device_of(&self, graph: &Graph, id: NodeId) -> DeviceCandidate {
        if let Some(d) = self.nodes.get(&id) {
            return *d;
        }
        if let Some((at, after)) = self.split {
            return if id >= at { after } else { self.default };
        }
        let mnemonic = graph.node(id).op.mnemonic();
        // The mnemonic without its payload (`reduce.sum{axes=[1]}` -> `reduce.sum`).
        let name = mnemonic.split('{').next().unwrap_or_default();
        self.by_op
            .iter()
            .find(|(m, _)| m == name)
            .map_or(self.default, |(_, d)| *d)
    }
}
