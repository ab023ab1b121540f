//! In-graph param updates on the CPU ([`Executable::run_updating`]): a run
//! whose bound outputs become param values instead of returned tensors.
//!
//! An update that is an elementwise node reading its own param (SGD's
//! `p - lr * g`), read by no other node, whose other inputs no later node
//! overwrites, is taken out of the run and computed afterwards straight
//! into the param's buffer, in place (the param is read through the
//! output, tile by tile). Any other update is computed in the arena as
//! usual and copied over its param after the run.
//!
//! [`Executable::run_updating`]: rlx_driver::Executable::run_updating

use super::{CpuExecutable, Loc};
use crate::kernels::{self, region, View, ViewMut};
use rlx_driver::{BackendError, Executable};
use rlx_ir::{node_label, HostTensor, NodeId};
use std::sync::Arc;

impl CpuExecutable {
    pub(super) fn run_with_updates(
        &mut self,
        inputs: &[&HostTensor],
        updates: &[(usize, usize)],
    ) -> Result<Vec<HostTensor>, BackendError> {
        // A param the run rewrites stays in the plain layout.
        for &(_, param) in updates {
            if param < self.params.len() {
                self.never_pack(param);
            }
        }
        let outputs = &self.lir.io.outputs;
        let mut sources = Vec::with_capacity(updates.len());
        for &(output, param) in updates {
            let (id, _) = outputs.get(output).ok_or_else(|| {
                BackendError::Signature(format!(
                    "update output {output} out of range ({} outputs)",
                    outputs.len()
                ))
            })?;
            let (_, name, shape) = self.lir.io.params.get(param).ok_or_else(|| {
                BackendError::Signature(format!("param index {param} out of range"))
            })?;
            if self.lir.graph.shape(*id) != shape {
                return Err(BackendError::Signature(format!(
                    "update output {output} of shape {} for param \"{name}\" of shape {shape}",
                    self.lir.graph.shape(*id)
                )));
            }
            sources.push((id.index(), param));
        }
        let direct: Vec<bool> = sources
            .iter()
            .map(|&(id, param)| self.updates_in_place(id, param, &sources))
            .collect();
        // The run skips the direct updates and returns only the outputs
        // that are not updates (both lists restored right after).
        let returned = outputs
            .iter()
            .enumerate()
            .filter(|(i, _)| !updates.iter().any(|u| u.0 == *i))
            .map(|(_, o)| o.clone())
            .collect();
        let skipped = |id: &NodeId| {
            sources
                .iter()
                .zip(&direct)
                .any(|(s, &d)| d && s.0 == id.index())
        };
        let schedule: Vec<NodeId> = self
            .lir
            .schedule
            .iter()
            .copied()
            .filter(|id| !skipped(id))
            .collect();
        let all_outputs = std::mem::replace(&mut self.lir.io.outputs, returned);
        let full_schedule = std::mem::replace(&mut self.lir.schedule, schedule);
        let outs = self.run(inputs);
        self.lir.io.outputs = all_outputs;
        self.lir.schedule = full_schedule;
        let mut outs = outs?;
        if outs.len() == self.lir.io.outputs.len() && !updates.is_empty() {
            // A run that reads its output list from elsewhere returned the
            // updates too: drop them here.
            let mut i = 0;
            outs.retain(|_| {
                i += 1;
                !updates.iter().any(|u| u.0 == i - 1)
            });
        }
        // Copies first: they may read a param a direct update then changes.
        let (in_place, copied): (Vec<_>, Vec<_>) =
            sources.iter().zip(&direct).partition(|(_, &d)| d);
        let copied: Vec<(usize, usize)> = copied.into_iter().map(|(s, _)| *s).collect();
        self.store_into_params(&copied, inputs)?;
        for (&(id, param), _) in in_place {
            self.compute_into_param(id, param, inputs)?;
        }
        Ok(outs)
    }

    /// Whether update node `id` of param `param` can run after the run,
    /// writing the param's buffer in place (see the module doc).
    fn updates_in_place(&self, id: usize, param: usize, sources: &[(usize, usize)]) -> bool {
        let g = &self.lir.graph;
        let n = g.node(NodeId(id as u32));
        let param_node = self.lir.io.params[param].0;
        let Some(pos) = self.lir.schedule.iter().position(|s| s.index() == id) else {
            return false;
        };
        let elementwise = region::steps_of_op(&n.op, n.inputs.len()).is_some();
        let read_elsewhere = g
            .nodes()
            .iter()
            .any(|m| m.inputs.iter().any(|i| i.index() == id));
        let once_an_output = self
            .lir
            .io
            .outputs
            .iter()
            .filter(|o| o.0.index() == id)
            .count()
            == 1;
        if !elementwise || read_elsewhere || !once_an_output || self.lir.plan.is_view(id) {
            return false;
        }
        if n.inputs.iter().filter(|&&i| i == param_node).count() != 1 {
            return false;
        }
        // Its other inputs: not params that updates change, and arena bytes
        // that nothing scheduled after it overwrites.
        let later_slots: Vec<(usize, usize)> = self.lir.schedule[pos + 1..]
            .iter()
            .filter(|s| !self.lir.plan.runs_nothing(s.index()))
            .filter_map(|s| self.arena_range(s.index()))
            .map(|(offset, len)| (offset, offset + len))
            .collect();
        n.inputs.iter().filter(|&&i| i != param_node).all(|i| {
            match (self.locs[i.index()], self.arena_range(i.index())) {
                (Loc::Param(q), _) => !sources.iter().any(|s| s.1 == q),
                (_, Some((offset, len))) => later_slots
                    .iter()
                    .all(|&(lo, hi)| hi <= offset || lo >= offset + len),
                // A constant, or an input read in place (which no node
                // overwrites).
                (_, None) => true,
            }
        })
    }

    /// Runs update node `id` with param `param`'s buffer as its output,
    /// reading the param through it (in place).
    fn compute_into_param(
        &mut self,
        id: usize,
        param: usize,
        inputs: &[&HostTensor],
    ) -> Result<(), BackendError> {
        let g = &self.lir.graph;
        let node_id = NodeId(id as u32);
        let n = g.node(node_id);
        let param_node = self.lir.io.params[param].0;
        let mut buf = self.params[param]
            .take()
            .ok_or_else(|| BackendError::Signature(format!("param index {param} is not set")))?;
        let views: Vec<Option<View>> = n
            .inputs
            .iter()
            .map(|&i| {
                (i != param_node).then(|| View {
                    dims: &self.dims[i.index()],
                    dtype: g.shape(i).dtype(),
                    bytes: self.read(i.index(), inputs),
                })
            })
            .collect();
        // A buffer another executable shares is copied first (theirs stays).
        let out_buf = Arc::make_mut(&mut buf);
        let mut out = ViewMut {
            dims: &self.dims[id],
            dtype: n.shape.dtype(),
            bytes: out_buf.bytes_mut(),
        };
        let result = kernels::run_in_place(n, &views, &mut out);
        self.params[param] = Some(buf);
        result.map_err(|e| e.at(node_label(g, node_id)))
    }

    /// Makes the values of `sources` (node index, param index; computed by
    /// the last run) the new values of their params. Values that are not in
    /// the arena (a param, a constant) are read before any param changes.
    fn store_into_params(
        &mut self,
        sources: &[(usize, usize)],
        inputs: &[&HostTensor],
    ) -> Result<(), BackendError> {
        let staged: Vec<Option<Vec<u8>>> = sources
            .iter()
            .map(|&(id, _)| {
                let in_arena = self.arena_range(id).is_some();
                (!in_arena).then(|| self.read(id, inputs).to_vec())
            })
            .collect();
        for (&(id, param), staged) in sources.iter().zip(staged) {
            match (staged, self.arena_range(id)) {
                (Some(bytes), _) => Self::overwrite_param(&mut self.params, param, &bytes),
                (None, Some((offset, len))) => Self::overwrite_param(
                    &mut self.params,
                    param,
                    &self.arena.bytes()[offset..offset + len],
                ),
                (None, _) => unreachable!("staged above"),
            }
        }
        Ok(())
    }
}
