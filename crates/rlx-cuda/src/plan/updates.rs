//! [`UpdatePlan`]: how a run's outputs become param values on the device
//! (`Executable::run_updating`, and optimizer steps that read gradient
//! outputs), without a host round trip. Pure Rust, so the ordering rules
//! are checked without a GPU (the tests' interpreter runs the same plan).
//!
//! Every read of a param in a run sees its value from before the run, so a
//! source that lies in a param some write changes (an output that is a
//! param itself, or a view of one) is first copied to scratch ("staged");
//! every other source lies in the arena or a constant, which no write
//! touches. An update whose source is its own param's bytes changes
//! nothing and is dropped.

use super::{Buf, LaunchPlan, Region};
use rlx_driver::BackendError;
use rlx_ir::DType;

/// What a write does with its source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateRule {
    /// The source's bytes become the param's (same dtype and size).
    Assign,
    /// The source is the param's gradient, applied by an optimizer step
    /// (f32 param and gradient of the same length).
    Gradient,
}

/// One param written after a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamWrite {
    /// The manifest param it writes.
    pub param: usize,
    /// The manifest output it reads.
    pub output: usize,
    /// Where that output lies after the run.
    pub source: Buf,
    /// The source is copied to scratch before any param changes.
    pub staged: bool,
}

/// The param writes of one run, in the order they are applied (staged
/// sources are all copied before the first write).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdatePlan {
    /// The rule every write follows.
    pub rule: UpdateRule,
    /// The writes (identity updates left out).
    pub writes: Vec<ParamWrite>,
    /// The manifest outputs the run still returns, in manifest order.
    pub returned: Vec<usize>,
}

fn bad(msg: String) -> BackendError {
    BackendError::Signature(msg)
}

impl UpdatePlan {
    /// Plans `updates` (`(output, param)` pairs of manifest indices) over
    /// `plan` under `rule`: each output and param at most once, in range,
    /// of matching dtype and size.
    pub fn new(
        plan: &LaunchPlan,
        updates: &[(usize, usize)],
        rule: UpdateRule,
    ) -> Result<UpdatePlan, BackendError> {
        let mut writes = Vec::with_capacity(updates.len());
        for (k, &(output, param)) in updates.iter().enumerate() {
            let source = *plan.outputs.get(output).ok_or_else(|| {
                bad(format!(
                    "update output {output} out of range ({} outputs)",
                    plan.outputs.len()
                ))
            })?;
            let (name, target) = plan.params.get(param).ok_or_else(|| {
                bad(format!(
                    "param index {param} out of range ({} params)",
                    plan.params.len()
                ))
            })?;
            if let Some(&(o, p)) = updates[..k].iter().find(|u| u.0 == output || u.1 == param) {
                return Err(bad(format!(
                    "update ({output}, {param}) repeats the output or param of ({o}, {p})"
                )));
            }
            let fits = match rule {
                UpdateRule::Assign => source.dtype == target.dtype && source.bytes == target.bytes,
                UpdateRule::Gradient => {
                    source.dtype == DType::F32
                        && target.dtype == DType::F32
                        && source.bytes == target.bytes
                }
            };
            if !fits {
                let what = match rule {
                    UpdateRule::Assign => "update",
                    UpdateRule::Gradient => "f32 gradient",
                };
                return Err(bad(format!(
                    "output {output} ({} bytes of {}) cannot be the {what} of param \"{name}\" ({} bytes of {})",
                    source.bytes, source.dtype, target.bytes, target.dtype
                )));
            }
            let identity = rule == UpdateRule::Assign
                && source.region == target.region
                && source.byte == target.byte;
            if !identity {
                writes.push(ParamWrite {
                    param,
                    output,
                    source,
                    staged: false,
                });
            }
        }
        let written: Vec<usize> = writes.iter().map(|w| w.param).collect();
        for w in &mut writes {
            w.staged = matches!(w.source.region, Region::Param(q) if written.contains(&q));
        }
        let returned = (0..plan.outputs.len())
            .filter(|o| !updates.iter().any(|u| u.0 == *o))
            .collect();
        Ok(UpdatePlan {
            rule,
            writes,
            returned,
        })
    }

    /// The staged writes' scratch places: `(write index, byte offset in
    /// one scratch buffer)`, and the buffer's size (offsets 256-aligned).
    pub fn scratch(&self) -> (Vec<(usize, usize)>, usize) {
        let mut at = 0usize;
        let mut places = Vec::new();
        for (i, w) in self.writes.iter().enumerate().filter(|(_, w)| w.staged) {
            places.push((i, at));
            at += w.source.bytes.div_ceil(256) * 256;
        }
        (places, at)
    }
}
