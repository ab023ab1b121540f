//! The reference training run the device optimizer steps are compared
//! with: the digits MLP's gradients from the CPU backend, applied on the
//! host by `rlx-optim` (torch's single-tensor optimizers).

use super::graphs::{digits_batch, digits_grads, digits_init, DIGIT_PARAMS};
use super::reference::{compile, ordered_inputs};
use rlx_ir::HostTensor;
use rlx_optim::Optimizer;

/// The manifest index of each of [`DIGIT_PARAMS`] in `lir`.
pub fn digit_slots(lir: &rlx_compile::LirModule) -> Vec<usize> {
    DIGIT_PARAMS
        .iter()
        .map(|n| lir.io.params.iter().position(|p| p.1 == *n).unwrap())
        .collect()
}

/// `steps` steps of `opt` on the digits MLP; returns each step's loss
/// and the final params in [`DIGIT_PARAMS`] order.
pub fn cpu_rlx_optim(opt: &mut dyn Optimizer, steps: usize) -> (Vec<f32>, Vec<Vec<f32>>) {
    let mut exe = compile(&rlx_cpu::CpuBackend, &digits_grads());
    let slots = digit_slots(exe.lir());
    let mut params: Vec<Vec<f32>> = digits_init()
        .iter()
        .map(|t| t.to_vec::<f32>().unwrap())
        .collect();
    let mut losses = Vec::new();
    for step in 0..steps {
        for ((&s, p), t) in slots.iter().zip(&params).zip(digits_init()) {
            let v = HostTensor::from_vec(p.clone(), t.dims()).unwrap();
            exe.set_param(s, &v).unwrap();
        }
        let (x, y) = digits_batch(step);
        let ins = ordered_inputs(exe.lir(), &[("x", &x), ("y", &y)]);
        let outs = exe.run(&ins).unwrap();
        losses.push(outs[0].to_vec::<f32>().unwrap()[0]);
        for (k, (name, p)) in DIGIT_PARAMS.iter().zip(params.iter_mut()).enumerate() {
            let g = outs[1 + k].to_vec::<f32>().unwrap();
            let dims = outs[1 + k].dims().to_vec();
            opt.step_f32(name, &dims, p, &g).unwrap();
        }
        opt.end_iteration();
    }
    (losses, params)
}
