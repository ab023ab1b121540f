//! The param prelude at run time: the hoisted, param-only part of a graph
//! (see `rlx_compile::split_param_prelude`) compiled on its own, evaluated
//! on the first run after any of its params changed, and its results
//! uploaded as the main executable's derived params; and the derived
//! params that only move param bytes ([`Assembly`]), written as their
//! params are set.

use crate::Result;
use rlx_compile::LirModule;
use rlx_driver::Executable;
use std::ops::Range;

/// The derived params assembled from param bytes (see
/// `rlx_compile::AssembledParam`, e.g. stacked Q / K / V weights): setting
/// a param writes its bytes straight into them, so the param has no buffer
/// of its own, nothing is recomputed and nothing goes stale.
#[derive(Default)]
pub(crate) struct Assembly {
    targets: Vec<AssembledTarget>,
}

struct AssembledTarget {
    /// Its index among the main executable's params.
    index: usize,
    /// True once its buffer exists (the first write allocates it).
    allocated: bool,
}

/// A run of a caller param's bytes and where it goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// The assembled param ([`Assembly::add`]'s number).
    pub(crate) target: usize,
    /// The param's bytes.
    pub(crate) bytes: Range<usize>,
    /// Their offset in the assembled param.
    pub(crate) offset: usize,
}

impl Assembly {
    /// Adds main param `index`; returns its number for [`Piece::target`].
    pub(crate) fn add(&mut self, index: usize) -> usize {
        self.targets.push(AssembledTarget {
            index,
            allocated: false,
        });
        self.targets.len() - 1
    }

    /// Gives the assembled params `pieces` go to their (zero) buffers.
    pub(crate) fn allocate(&mut self, main: &mut dyn Executable, pieces: &[Piece]) -> Result<()> {
        for p in pieces {
            let target = &mut self.targets[p.target];
            if !target.allocated {
                main.alloc_param(target.index)?;
                target.allocated = true;
            }
        }
        Ok(())
    }

    /// Writes `bytes`, the param's bytes from byte `at`, to where `pieces`
    /// of that param go (the ranges are checked at compile: in bounds).
    pub(crate) fn write(
        &mut self,
        main: &mut dyn Executable,
        pieces: &[Piece],
        at: usize,
        bytes: &[u8],
    ) -> Result<()> {
        self.allocate(main, pieces)?;
        for p in pieces {
            let (lo, hi) = (p.bytes.start.max(at), p.bytes.end.min(at + bytes.len()));
            if lo < hi {
                let dst = p.offset + (lo - p.bytes.start);
                let index = self.targets[p.target].index;
                main.write_param_bytes(index, dst, &bytes[lo - at..hi - at])?;
            }
        }
        Ok(())
    }
}

/// A compiled prelude and where its results go.
pub(crate) struct PreludeExec {
    exec: Box<dyn Executable>,
    /// Main-executable param index of each prelude output.
    targets: Vec<usize>,
    /// True when a param it reads changed since it last ran.
    stale: bool,
    /// How many times it ran.
    runs: usize,
}

impl PreludeExec {
    pub(crate) fn new(exec: Box<dyn Executable>, targets: Vec<usize>) -> PreludeExec {
        PreludeExec {
            exec,
            targets,
            stale: true,
            runs: 0,
        }
    }

    /// Uploads prelude param `index`; the hoisted values are recomputed on the next run.
    pub(crate) fn set_param(&mut self, index: usize, t: &rlx_ir::HostTensor) -> Result<()> {
        self.exec.set_param(index, t)?;
        self.stale = true;
        Ok(())
    }

    /// A shareable handle on prelude param `index` (see
    /// [`Executable::share_param`]).
    pub(crate) fn share_param(&self, index: usize) -> Option<rlx_driver::SharedParam> {
        self.exec.share_param(index)
    }

    /// The value of prelude param `index`.
    pub(crate) fn param_value(&self, index: usize) -> Result<rlx_ir::HostTensor> {
        Ok(self.exec.param_value(index)?)
    }

    /// Makes prelude param `index` read `shared`; recomputed on the next run.
    pub(crate) fn set_param_shared(
        &mut self,
        index: usize,
        shared: &rlx_driver::SharedParam,
    ) -> Result<()> {
        self.exec.set_param_shared(index, shared)?;
        self.stale = true;
        Ok(())
    }

    /// Gives prelude param `index` a zero buffer to be written in place.
    pub(crate) fn alloc_param(&mut self, index: usize) -> Result<()> {
        self.exec.alloc_param(index)?;
        self.stale = true;
        Ok(())
    }

    /// Writes bytes of prelude param `index` in place; recomputed on the next run.
    pub(crate) fn write_param_bytes(
        &mut self,
        index: usize,
        offset: usize,
        bytes: &[u8],
    ) -> Result<()> {
        self.exec.write_param_bytes(index, offset, bytes)?;
        self.stale = true;
        Ok(())
    }

    /// Recomputes the hoisted values into `main` when a param changed.
    pub(crate) fn refresh(&mut self, main: &mut dyn Executable) -> Result<()> {
        if !self.stale {
            return Ok(());
        }
        let values = self.exec.run(&[])?;
        // The prelude runs once per param change: its arena is not kept
        // between runs, and each value is dropped once `main` holds it, so
        // the hoisted weights are resident once, not three times.
        self.exec.release_scratch();
        for (&target, value) in self.targets.iter().zip(values) {
            main.set_param(target, &value)?;
        }
        self.stale = false;
        self.runs += 1;
        Ok(())
    }

    pub(crate) fn runs(&self) -> usize {
        self.runs
    }

    pub(crate) fn lir(&self) -> &LirModule {
        self.exec.lir()
    }
}
