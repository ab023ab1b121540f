//! Runs a LIR schedule over one arena: one kernel call per node, views
//! into the arena (or into param / constant buffers) as inputs and the
//! node's planned slot as output.

use crate::kernels::{self, control, run_node, View, ViewMut};
use crate::profile::Profile;
use rlx_compile::LirModule;
use rlx_driver::{BackendError, Executable, SharedParam};
use rlx_ir::{node_label, HostTensor, Op};
use std::sync::Arc;
use std::time::Instant;

#[path = "packed_weights.rs"]
mod packed_weights;
#[path = "param_update.rs"]
mod param_update;

/// A 64-byte aligned byte buffer.
#[derive(Clone)]
struct AlignedBuf {
    blocks: Vec<Block>,
    len: usize,
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; 64]);

impl AlignedBuf {
    fn zeroed(len: usize) -> AlignedBuf {
        AlignedBuf {
            blocks: vec![Block([0; 64]); len.div_ceil(64)],
            len,
        }
    }
    fn from_bytes(b: &[u8]) -> AlignedBuf {
        let mut a = AlignedBuf::zeroed(b.len());
        a.bytes_mut().copy_from_slice(b);
        a
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: blocks are plain bytes; len <= blocks.len() * 64.
        unsafe { std::slice::from_raw_parts(self.blocks.as_ptr() as *const u8, self.len) }
    }
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, with a unique borrow.
        unsafe { std::slice::from_raw_parts_mut(self.blocks.as_mut_ptr() as *mut u8, self.len) }
    }
    fn base(&mut self) -> *mut u8 {
        self.blocks.as_mut_ptr() as *mut u8
    }
}

/// Where a node's value lives at run time.
#[derive(Clone, Copy)]
enum Loc {
    Arena { offset: usize, len: usize },
    Param(usize),
    Constant(usize),
}

/// A graph compiled for the CPU.
pub struct CpuExecutable {
    lir: LirModule,
    arena: AlignedBuf,
    /// Reference counted so executables can share weights (see
    /// [`Executable::set_param_shared`]).
    params: Vec<Option<Arc<AlignedBuf>>>,
    constants: Vec<AlignedBuf>,
    locs: Vec<Loc>,
    dims: Vec<Vec<usize>>,
    /// Compiled sub-graphs of control-flow nodes, by node index.
    control: Vec<Option<control::ControlProgram>>,
    /// Per-node timing (`RLX_CPU_PROFILE`).
    profile: Option<Profile>,
    /// Matmul weights packed once ([`packed_weights`]).
    packing: packed_weights::Packing,
}

impl CpuExecutable {
    /// Prepares the arena and constant buffers of `lir`.
    pub fn new(lir: LirModule) -> Result<CpuExecutable, BackendError> {
        let g = &lir.graph;
        let mut constants = Vec::new();
        let mut locs = Vec::with_capacity(g.len());
        let mut dims = Vec::with_capacity(g.len());
        let mut programs = Vec::with_capacity(g.len());
        for id in g.ids() {
            let n = g.node(id);
            programs.push(control::compile(&n.op)?);
            dims.push(n.shape.static_dims().ok_or_else(|| BackendError::Kernel {
                node: node_label(g, id),
                message: format!("shape {} is not static", n.shape),
            })?);
            locs.push(match &n.op {
                Op::Param { .. } => Loc::Param(
                    lir.io
                        .params
                        .iter()
                        .position(|p| p.0 == id)
                        .expect("param in manifest"),
                ),
                Op::Constant { bytes } => {
                    constants.push(AlignedBuf::from_bytes(bytes));
                    Loc::Constant(constants.len() - 1)
                }
                _ => {
                    let s = lir.plan.slots[id.index()].expect("planned slot");
                    Loc::Arena {
                        offset: s.offset,
                        len: n.shape.size_bytes().unwrap_or(0),
                    }
                }
            });
        }
        let mut exec = CpuExecutable {
            arena: AlignedBuf::zeroed(lir.plan.arena_bytes),
            params: (0..lir.io.params.len()).map(|_| None).collect(),
            constants,
            locs,
            dims,
            control: programs,
            packing: packed_weights::Packing::plan(&lir),
            lir,
            profile: Profile::from_env(),
        };
        exec.pack_weights();
        Ok(exec)
    }

    /// Copies `bytes` over param `param`'s buffer, in place when no other
    /// executable shares it (else the param gets a buffer of its own): a
    /// param set again with the same size (a training step's update) costs
    /// no allocation and no page faults.
    fn overwrite_param(params: &mut [Option<Arc<AlignedBuf>>], param: usize, bytes: &[u8]) {
        let slot = &mut params[param];
        match slot.as_mut().and_then(Arc::get_mut) {
            Some(buf) if buf.len == bytes.len() => buf.bytes_mut().copy_from_slice(bytes),
            _ => *slot = Some(Arc::new(AlignedBuf::from_bytes(bytes))),
        }
    }

    fn read(&self, idx: usize) -> &[u8] {
        match self.locs[idx] {
            Loc::Arena { offset, len } => &self.arena.bytes()[offset..offset + len],
            Loc::Param(p) => self.params[p].as_ref().map_or(&[][..], |b| b.bytes()),
            Loc::Constant(c) => self.constants[c].bytes(),
        }
    }
}

impl Executable for CpuExecutable {
    fn set_param(&mut self, index: usize, value: &HostTensor) -> Result<(), BackendError> {
        if index >= self.params.len() {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range"
            )));
        }
        Self::overwrite_param(&mut self.params, index, value.bytes());
        self.param_replaced(index);
        Ok(())
    }

    fn share_param(&self, index: usize) -> Option<SharedParam> {
        let buf: Arc<AlignedBuf> = self.params.get(index)?.clone()?;
        if self.packing.packed[index] {
            // Others read the plain layout: they get a plain copy.
            let plain = self.plain_param_bytes(index)?;
            return Some(SharedParam(Arc::new(AlignedBuf::from_bytes(&plain))));
        }
        Some(SharedParam(buf))
    }

    fn set_param_shared(&mut self, index: usize, shared: &SharedParam) -> Result<(), BackendError> {
        let buf = Arc::clone(&shared.0)
            .downcast::<AlignedBuf>()
            .map_err(|_| BackendError::Signature("shared param is not a CPU buffer".into()))?;
        let len = self.lir.io.params.get(index).and_then(|p| p.2.size_bytes());
        if len != Some(buf.len) {
            return Err(BackendError::Signature(format!(
                "shared param of {} bytes for param index {index} of {len:?} bytes",
                buf.len
            )));
        }
        self.params[index] = Some(buf);
        self.param_replaced(index);
        Ok(())
    }

    fn write_param_bytes(
        &mut self,
        index: usize,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        let name = |i: usize| self.lir.io.params.get(i).map(|p| p.1.clone());
        let Some(Some(buf)) = self.params.get(index) else {
            return Err(BackendError::Signature(format!(
                "param {:?} (index {index}) is not set",
                name(index)
            )));
        };
        if offset
            .checked_add(bytes.len())
            .is_none_or(|end| end > buf.len)
        {
            return Err(BackendError::Signature(format!(
                "write of {} bytes at byte {offset} past the end of param {:?} ({} bytes)",
                bytes.len(),
                name(index),
                buf.len
            )));
        }
        self.unpack_param(index);
        let buf = self.params[index].as_mut().expect("checked above");
        Arc::make_mut(buf).bytes_mut()[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    fn alloc_param(&mut self, index: usize) -> Result<(), BackendError> {
        let len = self.lir.io.params.get(index).and_then(|p| p.2.size_bytes());
        let (Some(slot), Some(len)) = (self.params.get_mut(index), len) else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range"
            )));
        };
        *slot = Some(Arc::new(AlignedBuf::zeroed(len)));
        self.param_replaced(index);
        Ok(())
    }

    fn param_value(&self, index: usize) -> Result<HostTensor, BackendError> {
        let (_, name, shape) =
            self.lir.io.params.get(index).ok_or_else(|| {
                BackendError::Signature(format!("param index {index} out of range"))
            })?;
        let Some(bytes) = self.plain_param_bytes(index) else {
            return Err(BackendError::Signature(format!(
                "param \"{name}\" is not set"
            )));
        };
        let dims = shape.static_dims().unwrap_or_default();
        HostTensor::from_bytes(shape.dtype(), &dims, bytes)
            .map_err(|e| BackendError::Signature(format!("param \"{name}\": {e}")))
    }

    fn run_updating(
        &mut self,
        inputs: &[&HostTensor],
        updates: &[(usize, usize)],
    ) -> Result<Vec<HostTensor>, BackendError> {
        self.run_with_updates(inputs, updates)
    }

    fn release_scratch(&mut self) {
        self.arena = AlignedBuf::zeroed(0);
    }

    fn run(&mut self, inputs: &[&HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        if let Some(p) = self.params.iter().position(Option::is_none) {
            return Err(BackendError::Signature(format!(
                "param \"{}\" is not set",
                self.lir.io.params[p].1
            )));
        }
        if self.arena.len != self.lir.plan.arena_bytes {
            self.arena = AlignedBuf::zeroed(self.lir.plan.arena_bytes);
        }
        self.pack_weights();
        for ((id, _, _), t) in self.lir.io.inputs.iter().zip(inputs) {
            if let Loc::Arena { offset, len } = self.locs[id.index()] {
                self.arena.bytes_mut()[offset..offset + len].copy_from_slice(t.bytes());
            }
        }
        let base = self.arena.base();
        let g = &self.lir.graph;
        for &id in &self.lir.schedule {
            if self.lir.plan.is_view(id.index()) {
                continue; // a reshape / narrow whose bytes are already in place
            }
            let n = g.node(id);
            // An input the node overwrites in place is read through its output.
            let alias = self.lir.plan.in_place_of(id.index());
            let views: Vec<Option<View>> = n
                .inputs
                .iter()
                .map(|&i| {
                    if alias == Some(i.index()) {
                        return None;
                    }
                    let bytes = match self.locs[i.index()] {
                        // SAFETY: the slot lies inside the arena (check_plan), and the
                        // planner never lets a live input share bytes with this output
                        // (an input overwritten in place is not viewed: see `alias`).
                        Loc::Arena { offset, len } => unsafe {
                            std::slice::from_raw_parts(base.add(offset) as *const u8, len)
                        },
                        Loc::Param(p) => self.params[p].as_ref().map_or(&[][..], |b| b.bytes()),
                        Loc::Constant(c) => self.constants[c].bytes(),
                    };
                    Some(View {
                        dims: &self.dims[i.index()],
                        dtype: g.shape(i).dtype(),
                        bytes,
                    })
                })
                .collect();
            let Loc::Arena { offset, len } = self.locs[id.index()] else {
                unreachable!("scheduled nodes live in the arena")
            };
            // SAFETY: see above; this slot is disjoint from every live input.
            let out_bytes = unsafe { std::slice::from_raw_parts_mut(base.add(offset), len) };
            let mut out = ViewMut {
                dims: &self.dims[id.index()],
                dtype: n.shape.dtype(),
                bytes: out_bytes,
            };
            let started = self.profile.is_some().then(Instant::now);
            let result = if alias.is_some() {
                kernels::run_in_place(n, &views, &mut out)
            } else {
                let views: Vec<View> = views.into_iter().flatten().collect();
                match &mut self.control[id.index()] {
                    Some(prog) => control::run(&n.op, prog, &views, &mut out),
                    None => match self.packing.packed_weights(id.index()) {
                        Some(nr) => {
                            kernels::fused::matmul_packed_weights(&n.op, nr, &views, &mut out)
                        }
                        None => run_node(n, &views, &mut out),
                    },
                }
            };
            result.map_err(|message| BackendError::Kernel {
                node: node_label(g, id),
                message,
            })?;
            if let (Some(p), Some(t)) = (self.profile.as_mut(), started) {
                p.record(|| format!("{} {}", n.op.mnemonic(), n.shape), t.elapsed());
            }
        }
        if let Some(p) = self.profile.as_mut() {
            p.end_run();
        }
        let mut outs = Vec::with_capacity(self.lir.io.outputs.len());
        for (id, shape) in &self.lir.io.outputs {
            let dims = &self.dims[id.index()];
            outs.push(
                HostTensor::from_bytes(shape.dtype(), dims, self.read(id.index()).to_vec())
                    .map_err(|e| BackendError::Signature(e.to_string()))?,
            );
        }
        Ok(outs)
    }

    fn lir(&self) -> &LirModule {
        &self.lir
    }
}
