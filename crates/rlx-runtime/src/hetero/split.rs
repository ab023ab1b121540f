//! [`HeteroExecutable`]: compile per-device segments, run them in order.

use super::map::DeviceMap;
use crate::{CompileOptions, CompiledGraph, DeviceCandidate, Result, RuntimeError, Session};
use rlx_ir::{Graph, HostTensor, IrError, NodeId, Op};
use std::collections::{HashMap, HashSet};

/// A value moved between two segments because an edge crosses a cut.
#[derive(Clone, Debug, PartialEq)]
pub struct Transfer {
    /// The node (of the original graph) whose value moves.
    pub node: NodeId,
    /// Producing segment and its device.
    pub from: (usize, DeviceCandidate),
    /// Consuming segment and its device.
    pub to: (usize, DeviceCandidate),
    /// Bytes moved per run (`None` while a dim is symbolic).
    pub bytes: Option<usize>,
}

struct Segment {
    device: DeviceCandidate,
    exe: CompiledGraph,
    /// `(input name in the segment, original node)` to feed before running.
    feeds: Vec<(String, NodeId)>,
    /// Original nodes the segment outputs, in output order.
    outputs: Vec<NodeId>,
    params: Vec<String>,
}

/// One graph split into per-device segments, run as a whole.
pub struct HeteroExecutable {
    graph: Graph,
    segments: Vec<Segment>,
    transfers: Vec<Transfer>,
    /// Nodes fallback placement moved to the CPU ([`super::fallback`]).
    pub(super) fallback: Vec<super::CpuPlacement>,
}

fn bad_map(reason: String) -> RuntimeError {
    RuntimeError::Ir(IrError::InvalidOp {
        op: "hetero".into(),
        reason,
    })
}

impl HeteroExecutable {
    /// Splits `graph` by `map`, compiles every segment on its device
    /// (`CompileOptions::threads` from the candidate) and plans the transfers.
    pub fn compile(graph: &Graph, map: &DeviceMap) -> Result<Self> {
        let len = graph.len();
        if let Some(n) = map.explicit_nodes().find(|n| n.index() >= len) {
            return Err(bad_map(format!(
                "device map names node {n}, the graph has {len} nodes"
            )));
        }
        let is_leaf = |id: NodeId| graph.node(id).op.is_leaf();
        // Segment index of every non-leaf node: a new one wherever the device changes.
        let mut seg_of: Vec<Option<usize>> = vec![None; len];
        let mut runs: Vec<(DeviceCandidate, Vec<NodeId>)> = Vec::new();
        for id in graph.ids().filter(|&id| !is_leaf(id)) {
            let dev = map.device_of(graph, id);
            if runs.last().is_none_or(|(d, _)| *d != dev) {
                runs.push((dev, Vec::new()));
            }
            runs.last_mut().expect("just pushed").1.push(id);
            seg_of[id.index()] = Some(runs.len() - 1);
        }
        if runs.is_empty() {
            return Err(bad_map("the graph has no operations to place".into()));
        }
        if let Some(&o) = graph.outputs().iter().find(|&&o| is_leaf(o)) {
            return Err(bad_map(format!(
                "output {o} is a leaf (input, param or constant); nothing to place"
            )));
        }
        // Values a segment must hand on: read by a later segment, or a graph output.
        let mut exported: HashSet<NodeId> = graph.outputs().iter().copied().collect();
        for id in graph.ids() {
            for &i in &graph.node(id).inputs {
                if !is_leaf(i) && seg_of[i.index()] != seg_of[id.index()] {
                    exported.insert(i);
                }
            }
        }
        let mut segments = Vec::with_capacity(runs.len());
        let mut transfers = Vec::new();
        for (s, (device, ids)) in runs.into_iter().enumerate() {
            let mut sub = Graph::new(format!("{}.segment{s}", graph.name()));
            let mut local: HashMap<NodeId, NodeId> = HashMap::new();
            let mut feeds = Vec::new();
            let mut params = Vec::new();
            crate::subgraph::copy_nodes(graph, &mut sub, &mut local, &ids, |sub, i| {
                let src = graph.node(i);
                Ok::<_, RuntimeError>(match &src.op {
                    Op::Input { name } => {
                        feeds.push((name.clone(), i));
                        sub.try_input(name, src.shape.clone())?
                    }
                    Op::Param { name } => {
                        params.push(name.clone());
                        sub.try_param(name, src.shape.clone())?
                    }
                    _ if src.op.is_leaf() => sub.push_verified(src.clone()),
                    _ => {
                        let from = seg_of[i.index()].expect("non-leaf has a segment");
                        let from_dev = segments
                            .get(from)
                            .map_or(device, |seg: &Segment| seg.device);
                        transfers.push(Transfer {
                            node: i,
                            from: (from, from_dev),
                            to: (s, device),
                            bytes: src.shape.size_bytes(),
                        });
                        let name = format!("__hetero_{}", i.0);
                        feeds.push((name.clone(), i));
                        sub.try_input(&name, src.shape.clone())?
                    }
                })
            })?;
            let outputs: Vec<NodeId> = ids
                .iter()
                .copied()
                .filter(|i| exported.contains(i))
                .collect();
            sub.set_outputs(outputs.iter().map(|o| local[o]).collect());
            let opts = CompileOptions {
                threads: device.threads,
                ..Default::default()
            };
            let exe = Session::new(device.device).try_compile_with(sub, &opts)?;
            segments.push(Segment {
                device,
                exe,
                feeds,
                outputs,
                params,
            });
        }
        Ok(HeteroExecutable {
            graph: graph.clone(),
            segments,
            transfers,
            fallback: Vec::new(),
        })
    }

    /// The edges that cross segments, in the order they are made.
    pub fn transfers(&self) -> &[Transfer] {
        &self.transfers
    }

    /// The device of each segment, in run order.
    pub fn segment_devices(&self) -> Vec<DeviceCandidate> {
        self.segments.iter().map(|s| s.device).collect()
    }

    /// Sets a param on every segment that reads it.
    pub fn set_param_typed(&mut self, name: &str, value: &HostTensor) -> Result<()> {
        let mut found = false;
        for seg in &mut self.segments {
            if seg.params.iter().any(|p| p == name) {
                seg.exe.set_param_typed(name, value)?;
                found = true;
            }
        }
        if found {
            Ok(())
        } else {
            Err(RuntimeError::UnknownParam {
                name: name.into(),
                known: self
                    .graph
                    .params()
                    .iter()
                    .map(|p| p.1.to_string())
                    .collect(),
            })
        }
    }

    /// Runs every segment in order and returns the graph's outputs.
    pub fn run(&mut self, inputs: &[(&str, &HostTensor)]) -> Result<Vec<HostTensor>> {
        let known: Vec<String> = self
            .graph
            .inputs()
            .iter()
            .map(|i| i.1.to_string())
            .collect();
        if let Some((name, _)) = inputs.iter().find(|(n, _)| !known.iter().any(|k| k == n)) {
            return Err(RuntimeError::UnknownInput {
                name: name.to_string(),
                known,
            });
        }
        let mut values: HashMap<NodeId, HostTensor> = HashMap::new();
        for seg in &mut self.segments {
            let mut feed: Vec<(&str, &HostTensor)> = Vec::with_capacity(seg.feeds.len());
            for (name, id) in &seg.feeds {
                if let Some(v) = values.get(id) {
                    feed.push((name, v));
                } else if let Some((_, v)) = inputs.iter().find(|(n, _)| n == name) {
                    feed.push((name, v));
                }
                // A missing user input is reported by the segment by name.
            }
            let outs = seg.exe.try_run_typed(&feed)?;
            for (id, t) in seg.outputs.iter().zip(outs) {
                values.insert(*id, t);
            }
        }
        Ok(self
            .graph
            .outputs()
            .iter()
            .map(|o| values[o].clone())
            .collect())
    }
}
