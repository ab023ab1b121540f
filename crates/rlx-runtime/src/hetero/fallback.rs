//! CPU fallback placement: a graph on a device that lacks a kernel for some
//! of its nodes runs those nodes on the CPU (when the policy allows it),
//! with the transfers inserted and reported.

use super::map::DeviceMap;
use super::split::HeteroExecutable;
use crate::{CompileOptions, DeviceCandidate, DevicePolicy, Result, RuntimeError};
use rlx_driver::{BackendError, Device};
use rlx_ir::{node_label, Graph, Node, NodeId};
use std::collections::HashMap;

/// A node placed on the CPU because its device has no kernel for it.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuPlacement {
    /// The node, in the original graph.
    pub node: NodeId,
    /// Its label (`%7 = cumsum{axis=0} ...`).
    pub label: String,
    /// The device's refusal.
    pub reason: String,
}

/// What fallback placement did: the nodes it put on the CPU and the bytes
/// moved between devices per run.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FallbackReport {
    /// Nodes placed on the CPU, in graph order.
    pub cpu_nodes: Vec<CpuPlacement>,
    /// Bytes crossing between devices per run (`None` while a dim is symbolic).
    pub bytes_moved: Option<usize>,
}

impl std::fmt::Display for FallbackReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bytes = self
            .bytes_moved
            .map_or("an unknown number of".into(), |b| b.to_string());
        writeln!(
            f,
            "{} node(s) placed on the CPU, {bytes} bytes moved per run",
            self.cpu_nodes.len()
        )?;
        for p in &self.cpu_nodes {
            writeln!(f, "  {} ({})", p.label, p.reason)?;
        }
        Ok(())
    }
}

fn unsupported(e: &RuntimeError) -> bool {
    matches!(e, RuntimeError::Backend(BackendError::Unsupported { .. }))
}

/// Compiles node `id` alone (its operands as inputs of their shapes) on
/// `device`: `Ok(None)` when it compiles, `Ok(Some(reason))` when the
/// device has no kernel for it, other errors as they are.
fn refusal(graph: &Graph, id: NodeId, device: DeviceCandidate) -> Result<Option<String>> {
    let node = graph.node(id);
    let mut probe = Graph::new(format!("{}.probe{}", graph.name(), id.0));
    let mut inputs = Vec::with_capacity(node.inputs.len());
    for (k, &i) in node.inputs.iter().enumerate() {
        inputs.push(probe.try_input(&format!("operand{k}"), graph.shape(i).clone())?);
    }
    let y = probe.push_verified(Node {
        inputs,
        ..node.clone()
    });
    probe.set_outputs(vec![y]);
    match device.compile(probe, &CompileOptions::default()) {
        Ok(_) => Ok(None),
        Err(e) if unsupported(&e) => Ok(Some(e.to_string())),
        Err(e) => Err(e),
    }
}

impl HeteroExecutable {
    /// `graph` on `device`. A node the device has no kernel for is its
    /// named compile error ([`BackendError::Unsupported`]) unless `policy`
    /// allows fallback (`policy.fallback` and the CPU permitted): then each
    /// such node runs on the CPU, with the transfers inserted, and
    /// [`HeteroExecutable::fallback_report`] lists them.
    pub fn compile_with_fallback(
        graph: &Graph,
        device: DeviceCandidate,
        policy: &DevicePolicy,
    ) -> Result<Self> {
        if let Err(reason) = policy.check(device.device) {
            return Err(RuntimeError::DeviceUnavailable {
                device: device.device,
                reason,
            });
        }
        let whole = HeteroExecutable::compile(graph, &DeviceMap::new(device));
        let cpu = DeviceCandidate::new(Device::Cpu);
        let allowed = policy.fallback && device != cpu && policy.check(Device::Cpu).is_ok();
        let err = match whole {
            Err(e) if allowed && unsupported(&e) => e,
            other => return other,
        };
        // One probe per distinct node signature.
        let mut seen: HashMap<String, Option<String>> = HashMap::new();
        let mut cpu_nodes = Vec::new();
        for id in graph.ids().filter(|&id| !graph.node(id).op.is_leaf()) {
            let node = graph.node(id);
            let operands: Vec<_> = node.inputs.iter().map(|&i| graph.shape(i)).collect();
            let key = format!("{:?} {operands:?} -> {}", node.op, node.shape);
            let why = match seen.get(&key) {
                Some(w) => w.clone(),
                None => {
                    let w = refusal(graph, id, device)?;
                    seen.insert(key, w.clone());
                    w
                }
            };
            if let Some(reason) = why {
                cpu_nodes.push(CpuPlacement {
                    node: id,
                    label: node_label(graph, id),
                    reason,
                });
            }
        }
        if cpu_nodes.is_empty() {
            // Refused as a whole, though every node compiles alone.
            return Err(err);
        }
        let ids: Vec<NodeId> = cpu_nodes.iter().map(|p| p.node).collect();
        let mut exe = HeteroExecutable::compile(graph, &DeviceMap::new(device).nodes(&ids, cpu))?;
        exe.fallback = cpu_nodes;
        Ok(exe)
    }

    /// The nodes fallback placement put on the CPU and the bytes moved
    /// between devices per run (empty for a graph the device ran whole).
    pub fn fallback_report(&self) -> FallbackReport {
        FallbackReport {
            cpu_nodes: self.fallback.clone(),
            bytes_moved: self.transfers().iter().map(|t| t.bytes).sum(),
        }
    }
}
