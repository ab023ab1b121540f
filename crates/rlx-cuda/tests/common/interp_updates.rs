//! [`UpdatePlan`]s run on the host exactly as the executor runs them on
//! the device: the plan's steps, then the returned outputs read, the
//! staged sources copied, and the writes applied in order (a byte copy,
//! or an optimizer step through the host mirror of `optim.cu`).

use super::interp::{place, run_arena};
use super::optim_mirror::Mirror;
use rlx_cuda::plan::{Buf, LaunchPlan, UpdatePlan, UpdateRule};
use rlx_ir::HostTensor;

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Runs `plan` with `inputs` and the manifest params' bytes `params`,
/// then applies `updates` to `params` (gradient writes through `opt`);
/// returns the returned outputs' bytes.
pub fn interpret_updating(
    plan: &LaunchPlan,
    updates: &UpdatePlan,
    inputs: &[&HostTensor],
    params: &mut [Vec<u8>],
    mut opt: Option<&mut Mirror>,
) -> Vec<Vec<u8>> {
    let arena = {
        let views: Vec<&[u8]> = params.iter().map(|p| p.as_slice()).collect();
        run_arena(plan, inputs, &views)
    };
    let read = |params: &[Vec<u8>], b: &Buf| {
        let views: Vec<&[u8]> = params.iter().map(|p| p.as_slice()).collect();
        place(&plan.constants, &arena, &views, b).to_vec()
    };
    let outs = updates
        .returned
        .iter()
        .map(|&o| read(params, &plan.outputs[o]))
        .collect();
    let staged: Vec<Option<Vec<u8>>> = updates
        .writes
        .iter()
        .map(|w| w.staged.then(|| read(params, &w.source)))
        .collect();
    for (w, staged) in updates.writes.iter().zip(staged) {
        let src = staged.unwrap_or_else(|| read(params, &w.source));
        let target = &plan.params[w.param].1;
        let dst = &mut params[w.param][target.byte..target.byte + target.bytes];
        match updates.rule {
            UpdateRule::Assign => dst.copy_from_slice(&src),
            UpdateRule::Gradient => {
                let mut p = f32s(dst);
                opt.as_deref_mut()
                    .expect("a gradient update needs an optimizer")
                    .step(w.param, &mut p, &f32s(&src));
                for (c, v) in dst.chunks_exact_mut(4).zip(p) {
                    c.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
    outs
}
