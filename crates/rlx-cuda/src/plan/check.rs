//! [`LaunchPlan::check`]: runs the plan on paper, tagging every arena byte
//! with the node whose value it holds, to prove that each launch reads only
//! values already written and still intact (so live buffers never overlap)
//! and that every output survives to the end. A joined concat runs no
//! launch: each of its bytes must hold the part its parts' launches wrote
//! there.

use super::{Buf, Kernel, LaunchPlan, Region, Step};
use thiserror::Error;

/// A plan that would read garbage, write outside its buffers or lose a
/// value still needed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PlanFault {
    /// A launch reads bytes that do not (or no longer) hold its operand.
    #[error("{step}: operand {operand} at arena bytes {byte}..{end} holds {found} instead")]
    StaleRead {
        /// The reading step's label.
        step: String,
        /// The operand's node.
        operand: String,
        /// First byte.
        byte: usize,
        /// One past the last byte.
        end: usize,
        /// What those bytes hold (`nothing written`, or another node).
        found: String,
    },
    /// A launch that is not elementwise writes over bytes it reads.
    #[error("{step}: writes {output} over its operand {operand} (only an elementwise kernel may run in place)")]
    Overlap {
        /// The step's label.
        step: String,
        /// Its output.
        output: String,
        /// The operand it overwrites.
        operand: String,
    },
    /// A value lies outside its buffer, or a launch writes a param or constant.
    #[error("{what}: {why}")]
    OutOfBounds {
        /// The step or value.
        what: String,
        /// Why.
        why: String,
    },
}

const UNWRITTEN: u32 = u32::MAX;

/// An output may share bytes with an operand only as an elementwise
/// kernel's exact in-place reuse (each element read before it is written).
fn overlap(step: &Step, b: &Buf) -> Result<(), PlanFault> {
    let o = &step.output;
    if b.region != Region::Arena || b.byte >= o.byte + o.bytes || o.byte >= b.byte + b.bytes {
        return Ok(());
    }
    let elementwise = matches!(
        step.kernel,
        Kernel::Unary(_) | Kernel::Binary { .. } | Kernel::Select { .. }
    );
    if elementwise && b.byte == o.byte && b.bytes == o.bytes {
        return Ok(());
    }
    Err(PlanFault::Overlap {
        step: step.label.clone(),
        output: o.node.to_string(),
        operand: b.node.to_string(),
    })
}

impl LaunchPlan {
    /// Simulates the plan: inputs are written first, then each step reads
    /// its operands (which must carry their owner's tag on every byte) and
    /// writes its output's tag; at the end every output must be intact.
    pub fn check(&self) -> Result<(), PlanFault> {
        let mut tags = vec![UNWRITTEN; self.arena_bytes];
        for (name, b) in &self.inputs {
            self.write(&mut tags, b, &format!("input {name}"))?;
        }
        for step in &self.steps {
            for b in &step.inputs {
                self.read(&tags, b, &step.label)?;
                overlap(step, b)?;
            }
            self.write(&mut tags, &step.output, &step.label)?;
        }
        for (k, b) in self.outputs.iter().enumerate() {
            self.read(&tags, b, &format!("output {k}"))?;
        }
        Ok(())
    }

    fn bounds(&self, b: &Buf, what: &str) -> Result<(), PlanFault> {
        let size = match b.region {
            Region::Arena => self.arena_bytes,
            Region::Param(i) => self.params.get(i).map_or(0, |p| p.1.bytes),
            Region::Const(i) => self.constants.get(i).map_or(0, |c| c.len()),
        };
        if b.byte + b.bytes > size {
            return Err(PlanFault::OutOfBounds {
                what: what.into(),
                why: format!(
                    "{} bytes {}..{} of {:?}, which holds {size}",
                    b.node,
                    b.byte,
                    b.byte + b.bytes,
                    b.region
                ),
            });
        }
        Ok(())
    }

    fn write(&self, tags: &mut [u32], b: &Buf, what: &str) -> Result<(), PlanFault> {
        self.bounds(b, what)?;
        if b.region != Region::Arena {
            return Err(PlanFault::OutOfBounds {
                what: what.into(),
                why: format!("writes {:?}, outside the arena", b.region),
            });
        }
        tags[b.byte..b.byte + b.bytes].fill(b.node.0);
        Ok(())
    }

    fn read(&self, tags: &[u32], b: &Buf, what: &str) -> Result<(), PlanFault> {
        self.bounds(b, what)?;
        if b.region != Region::Arena {
            return Ok(()); // params and constants are never overwritten
        }
        let (lo, hi) = (b.byte, b.byte + b.bytes);
        // Who must have written each byte: the owner, or for a joined
        // concat (and views of it) the part whose range holds the byte.
        let holders: Vec<(usize, usize, u32)> =
            match self.joined.iter().find(|(c, _)| c.node == b.owner) {
                Some((c, parts)) => {
                    let mut at = c.byte;
                    let mut spans = Vec::with_capacity(parts.len());
                    for p in parts {
                        if p.byte != at {
                            return Err(PlanFault::OutOfBounds {
                                what: what.into(),
                                why: format!("part {} of {} is not at byte {at}", p.node, c.node),
                            });
                        }
                        spans.push((p.byte, p.byte + p.bytes, p.node.0));
                        at += p.bytes;
                    }
                    if at != c.byte + c.bytes {
                        return Err(PlanFault::OutOfBounds {
                            what: what.into(),
                            why: format!("the parts of {} do not fill it", c.node),
                        });
                    }
                    spans
                }
                None => vec![(lo, hi, b.owner.0)],
            };
        for (start, end, tag) in holders {
            let span = &tags[start.max(lo)..end.min(hi).max(start.max(lo))];
            if let Some(&found) = span.iter().find(|&&t| t != tag) {
                return Err(PlanFault::StaleRead {
                    step: what.into(),
                    operand: b.node.to_string(),
                    byte: b.byte,
                    end: b.byte + b.bytes,
                    found: if found == UNWRITTEN {
                        "nothing written".into()
                    } else {
                        format!("%{found}")
                    },
                });
            }
        }
        Ok(())
    }
}
