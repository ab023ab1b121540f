//! Param updates on the device: `run_updating` copies each update output
//! over its param, and [`CudaExecutable::run_training_step`] applies an
//! optimizer step ([`DeviceOptimizer`]) to each param from its gradient
//! output, both stream-ordered after the run, with no host round trip
//! (the order rules are [`UpdatePlan`]'s).

use super::{whole, CudaExecutable};
use crate::optim::DeviceOptimizer;
use crate::plan::{UpdatePlan, UpdateRule};
use rlx_driver::BackendError;
use rlx_ir::HostTensor;

impl CudaExecutable {
    /// Runs once, then applies one optimizer step to param `param` from
    /// manifest output `grad` for each `(grad, param)` of `grads` (f32
    /// gradients of the params' length), on the device, with `opt`'s state
    /// on the device; returns the outputs that are not gradients, in
    /// manifest order. Every read of a param in the run sees its value from
    /// before the step.
    pub fn run_training_step(
        &mut self,
        inputs: &[&HostTensor],
        grads: &[(usize, usize)],
        opt: &mut DeviceOptimizer,
    ) -> Result<Vec<HostTensor>, BackendError> {
        let updates = UpdatePlan::new(&self.plan, grads, UpdateRule::Gradient)?;
        self.run_and_update(inputs, &updates, Some(opt))
    }

    /// Runs, reads back the returned outputs, then applies `updates`
    /// (gradient steps through `opt`).
    pub(super) fn run_and_update(
        &mut self,
        inputs: &[&HostTensor],
        updates: &UpdatePlan,
        mut opt: Option<&mut DeviceOptimizer>,
    ) -> Result<Vec<HostTensor>, BackendError> {
        self.launch_all(inputs)?;
        // Returned outputs first: one may lie in a param a write changes.
        let outs = updates
            .returned
            .iter()
            .map(|&o| {
                let dims = self.lir.io.outputs[o].1.static_dims().unwrap_or_default();
                self.read_back(&self.plan.outputs[o], &dims)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let gpu = self.gpu.clone();
        let (staged, scratch_bytes) = updates.scratch();
        let scratch = match scratch_bytes {
            0 => None,
            n => Some(gpu.take_bytes(n).map_err(|e| self.device_err(e))?),
        };
        let scratch_at = scratch.as_ref().map_or(0, |s| super::base(s, &gpu));
        let result: Result<(), BackendError> = (|| {
            for &(i, offset) in &staged {
                let w = &updates.writes[i];
                // SAFETY: the source is a planned place of its buffer; the
                // scratch holds `scratch_bytes` bytes from `scratch_at`.
                unsafe {
                    gpu.copy_at(
                        scratch_at + offset as u64,
                        self.address(&w.source),
                        w.source.bytes,
                    )
                }
                .map_err(|e| whole(&self.plan, e))?;
            }
            for (i, w) in updates.writes.iter().enumerate() {
                if w.source.bytes == 0 {
                    continue;
                }
                let src = match staged.iter().find(|s| s.0 == i) {
                    Some(&(_, offset)) => scratch_at + offset as u64,
                    None => self.address(&w.source),
                };
                let dst = self.address(&self.plan.params[w.param].1);
                let label = || format!("update of param {}", self.plan.params[w.param].0);
                let res = match (updates.rule, opt.as_deref_mut()) {
                    // SAFETY: source and param hold `bytes` bytes (the update plan checked).
                    (UpdateRule::Assign, _) => unsafe { gpu.copy_at(dst, src, w.source.bytes) },
                    // SAFETY: f32 param and gradient of `numel` elements (checked).
                    (UpdateRule::Gradient, Some(o)) => unsafe {
                        o.step_at(&gpu, w.param, dst, src, w.source.numel())
                    },
                    (UpdateRule::Gradient, None) => {
                        return Err(BackendError::Signature(format!(
                            "{}: a gradient update needs an optimizer",
                            label()
                        )))
                    }
                };
                res.map_err(|e| BackendError::Kernel {
                    node: label(),
                    message: e.to_string(),
                })?;
            }
            Ok(())
        })();
        if let Some(s) = scratch {
            // Stream-ordered: a later user of the cached buffer runs after these copies.
            gpu.give_bytes(s);
        }
        result.map(|()| outs)
    }
}
