//! Control-flow kernels: `If`, `While`, `Scan` and `CustomFn` run their
//! sub-graphs as real control flow (nothing is unrolled). Each sub-graph is
//! compiled once, through the normal lowering with the enclosing module's
//! [`LirModule::subgraph_options`] (the session's precision, passes and
//! fusion), into its own [`CpuExecutable`] (own plan and arena) and invoked
//! per iteration. The
//! results are written back to back into the op's tuple buffer
//! (`rlx_ir::ops::control::tuple_layout`), which `TupleGet` reads.

use super::{KernelError, KernelResult, View, ViewMut};
use crate::executor::CpuExecutable;
use rlx_compile::{lower, LirModule, LowerOptions};
use rlx_driver::{BackendError, Executable};
use rlx_ir::ops::control::{result_shapes, subgraphs, tuple_layout};
use rlx_ir::{HostTensor, Op};

/// The compiled sub-graphs of one control node, in
/// `rlx_ir::ops::control::subgraphs` order.
pub struct ControlProgram {
    subs: Vec<CpuExecutable>,
}

impl ControlProgram {
    /// The compiled sub-graphs, in `rlx_ir::ops::control::subgraphs` order.
    pub fn lirs(&self) -> impl Iterator<Item = &LirModule> {
        self.subs.iter().map(rlx_driver::Executable::lir)
    }
}

/// Compiles the sub-graphs of `op` with `opts` (the enclosing module's
/// [`LirModule::subgraph_options`]); `None` for an op without any.
pub fn compile(op: &Op, opts: &LowerOptions) -> Result<Option<ControlProgram>, BackendError> {
    let graphs = subgraphs(op);
    if graphs.is_empty() {
        return Ok(None);
    }
    let mut subs = Vec::with_capacity(graphs.len());
    for (role, g) in graphs {
        let lir =
            lower(g, &crate::claims, opts).map_err(|source| BackendError::SubGraphCompile {
                node: op.mnemonic(),
                role: role.to_string(),
                source: rlx_ir::SourceBox::new(source),
            })?;
        subs.push(CpuExecutable::new(lir)?);
    }
    Ok(Some(ControlProgram { subs }))
}

fn tensor(v: &View) -> Result<HostTensor, KernelError> {
    Ok(HostTensor::from_bytes(v.dtype, v.dims, v.bytes.to_vec())?)
}

fn call(
    exe: &mut CpuExecutable,
    role: &'static str,
    args: &[HostTensor],
) -> Result<Vec<HostTensor>, KernelError> {
    let refs: Vec<&HostTensor> = args.iter().collect();
    exe.run(&refs).map_err(|source| KernelError::SubGraph {
        role,
        source: rlx_ir::SourceBox::new(source),
    })
}

fn truth(t: &HostTensor) -> bool {
    t.bytes().first().is_some_and(|&b| b != 0)
}

/// Writes whole results into the tuple buffer at their offsets.
fn write_results(out: &mut ViewMut, offsets: &[usize], results: &[HostTensor]) -> KernelResult {
    for (r, &o) in results.iter().zip(offsets) {
        let b = r.bytes();
        let dst = out
            .bytes
            .get_mut(o..o + b.len())
            .ok_or_else(|| format!("result of {} bytes at {o} overflows the tuple", b.len()))?;
        dst.copy_from_slice(b);
    }
    Ok(())
}

/// Runs the control op `op` with its compiled sub-graphs.
pub fn run(op: &Op, prog: &mut ControlProgram, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let shapes = result_shapes(op).ok_or("not a control op")?;
    let (offsets, _) = tuple_layout(&shapes);
    let args: Vec<HostTensor> = ins.iter().map(tensor).collect::<Result<_, _>>()?;
    let results = match op {
        Op::If(_) => {
            let (pred, operands) = args.split_first().ok_or("if without a predicate")?;
            let (k, role) = if truth(pred) {
                (0, "then")
            } else {
                (1, "else")
            };
            call(&mut prog.subs[k], role, operands)?
        }
        Op::CustomFn(_) => call(&mut prog.subs[0], "body", &args)?,
        Op::While(s) => {
            let (cond, body) = prog.subs.split_at_mut(1);
            let mut carry = args;
            let mut steps = 0usize;
            while truth(&call(&mut cond[0], "cond", &carry)?[0]) {
                if steps == s.max_iterations {
                    return Err(fail!(
                        "the loop ran {steps} iterations without its condition turning false (max_iterations)"
                    ));
                }
                carry = call(&mut body[0], "body", &carry)?;
                steps += 1;
            }
            carry
        }
        Op::Scan(s) => return run_scan(s, &mut prog.subs[0], args, &shapes, &offsets, out),
        _ => return Err(fail!("{} is not a control op", op.mnemonic())),
    };
    write_results(out, &offsets, &results)
}

fn run_scan(
    s: &rlx_ir::ops::control::ScanSpec,
    body: &mut CpuExecutable,
    mut args: Vec<HostTensor>,
    shapes: &[rlx_ir::Shape],
    offsets: &[usize],
    out: &mut ViewMut,
) -> KernelResult {
    let xs = args.split_off(s.num_carry);
    let mut carry = args;
    let mut step_args = Vec::with_capacity(carry.len() + xs.len());
    for t in 0..s.length {
        let t = if s.reverse { s.length - 1 - t } else { t };
        step_args.clear();
        step_args.append(&mut carry);
        for x in &xs {
            let per = x.bytes().len() / s.length;
            let bytes = x.bytes()[t * per..(t + 1) * per].to_vec();
            let t = HostTensor::from_bytes(x.dtype(), &x.dims()[1..], bytes)?;
            step_args.push(t);
        }
        let mut outs = call(body, "body", &step_args)?;
        let ys = outs.split_off(s.num_carry);
        carry = outs;
        for (k, y) in ys.iter().enumerate() {
            let r = s.num_carry + k;
            let per = shapes[r].size_bytes().unwrap_or(0) / s.length.max(1);
            let o = offsets[r] + t * per;
            out.bytes
                .get_mut(o..o + per)
                .ok_or("a scan output overflows the tuple")?
                .copy_from_slice(y.bytes());
        }
    }
    write_results(out, &offsets[..s.num_carry], &carry)
}

/// `TupleGet`: copies `out`'s bytes from `offset` of the tuple buffer.
pub fn tuple_get(offset: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let n = out.bytes.len();
    let src = ins[0].bytes.get(offset..offset + n).ok_or_else(|| {
        format!(
            "reads {n} bytes at {offset} of a {}-byte tuple",
            ins[0].bytes.len()
        )
    })?;
    out.bytes.copy_from_slice(src);
    Ok(())
}
