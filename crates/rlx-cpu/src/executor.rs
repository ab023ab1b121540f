//! Runs a LIR schedule over one arena: one kernel call per node, views
//! into the arena (or into param / constant buffers) as inputs and the
//! node's planned slot as output. Nodes the plan says run nothing
//! (`MemoryPlan::runs_nothing`: views, and joined concats whose parts'
//! kernels already wrote into the concat's slot) are skipped, and so is
//! a stem conv its max pool runs in bands (`stem_pool_plan.rs`: the pool
//! reads the conv's inputs instead of its output).

use crate::aligned_buf::AlignedBuf;
use crate::kernels::{self, control, run_node, View, ViewMut};
use crate::profile::Profile;
use rlx_compile::LirModule;
use rlx_driver::{check_output_tensors, BackendError, Executable, SharedParam};
use rlx_ir::{node_label, HostTensor, NodeId, Op};
use smallvec::SmallVec;
use std::sync::Arc;
use std::time::Instant;

#[path = "nchwc_layout.rs"]
mod nchwc_layout;
#[path = "packed_weights.rs"]
mod packed_weights;
#[path = "param_update.rs"]
mod param_update;
#[path = "stem_pool_plan.rs"]
mod stem_pool_plan;
#[path = "widen_on_read.rs"]
mod widen_on_read;
#[path = "winograd_weights.rs"]
mod winograd_weights;

/// Where a node's value lives at run time.
#[derive(Clone, Copy)]
enum Loc {
    Arena {
        offset: usize,
        len: usize,
    },
    /// Graph input `input` (or a view of it, `offset` bytes in), which no
    /// node overwrites: read in place from the caller's tensor when its
    /// bytes are aligned, else copied to its planned arena slot `arena`.
    Input {
        input: usize,
        offset: usize,
        arena: usize,
        len: usize,
    },
    /// The node of manifest output `output`, owned (neither a view nor
    /// written over its input) and viewed by no node: computed straight
    /// into the caller's tensor by [`Executable::run_into`] when its bytes
    /// are aligned, else into its arena slot `arena`.
    Output {
        output: usize,
        arena: usize,
        len: usize,
    },
    Param(usize),
    Constant(usize),
}

/// Alignment a caller's tensor bytes need to be read or written in place:
/// that of every element type (malloc gives 16).
const IN_PLACE_ALIGN: usize = 16;

/// The bytes of the caller's tensors a run reads or writes in place.
#[derive(Default)]
struct Bound {
    /// Per input: read from the caller's tensor (else from the arena).
    inputs: Vec<bool>,
    /// Per manifest output: the caller's bytes it is computed into, for
    /// the current [`Executable::run_into`] only.
    outputs: Vec<Option<*mut u8>>,
}

impl Bound {
    /// The arena range of a value at `loc` in the current run, if it lies
    /// in the arena.
    fn arena_range(&self, loc: Loc) -> Option<(usize, usize)> {
        match loc {
            Loc::Arena { offset, len } => Some((offset, len)),
            Loc::Input {
                input, arena, len, ..
            } => (!self.inputs[input]).then_some((arena, len)),
            Loc::Output { output, arena, len } => {
                self.outputs[output].is_none().then_some((arena, len))
            }
            Loc::Param(_) | Loc::Constant(_) => None,
        }
    }
}

/// Where each node's bytes are during one run.
struct Places<'r> {
    locs: &'r [Loc],
    bound: &'r Bound,
    params: &'r [Option<Arc<AlignedBuf>>],
    constants: &'r [AlignedBuf],
    base: *mut u8,
    inputs: &'r [&'r HostTensor],
}

impl Places<'_> {
    /// Node `i`'s bytes: its arena slot, a param or constant buffer, or a
    /// caller's tensor.
    fn at(&self, i: usize) -> (*mut u8, usize) {
        let loc = self.locs[i];
        if let Some((offset, len)) = self.bound.arena_range(loc) {
            // SAFETY: the slot lies inside the arena (check_plan).
            return (unsafe { self.base.add(offset) }, len);
        }
        let bytes = match loc {
            Loc::Input {
                input, offset, len, ..
            } => &self.inputs[input].bytes()[offset..offset + len],
            Loc::Output { output, len, .. } => {
                return (self.bound.outputs[output].expect("bound output"), len)
            }
            Loc::Param(p) => self.params[p].as_ref().map_or(&[][..], |b| b.bytes()),
            Loc::Constant(c) => self.constants[c].bytes(),
            Loc::Arena { .. } => unreachable!("arena values returned above"),
        };
        (bytes.as_ptr() as *mut u8, bytes.len())
    }
}

// SAFETY: the output pointers are set and used within one `run_into` call,
// which holds the caller's tensors borrowed mutably throughout.
unsafe impl Send for Bound {}

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
    /// Winograd / NCHWc conv weights prepared once ([`winograd_weights`]).
    winograd: winograd_weights::WinogradWeights,
    /// Casts not run: their readers read the source ([`widen_on_read`]).
    widened: Vec<Option<NodeId>>,
    /// Caller tensors of the current run read / written in place.
    bound: Bound,
    /// Threads this executable's kernels use (`None`: [`crate::num_threads`]'s default).
    thread_limit: Option<usize>,
    /// Stem convs the last run ran with their max pool.
    stem_pools_fused: usize,
}

impl CpuExecutable {
    /// Prepares the arena and constant buffers of `lir`.
    ///
    /// A graph that computes on a storage-only dtype
    /// ([`rlx_ir::DType::is_storage_only`]) is refused here, naming the node,
    /// the op and the dtype: only leaves and `Cast` may hold one.
    pub fn new(lir: LirModule) -> Result<CpuExecutable, BackendError> {
        let g = &lir.graph;
        crate::storage::check_storage_dtypes(g)?;
        let mut constants = Vec::new();
        let mut locs = Vec::with_capacity(g.len());
        let mut dims = Vec::with_capacity(g.len());
        let mut programs = Vec::with_capacity(g.len());
        for id in g.ids() {
            let n = g.node(id);
            crate::splat::check_compilable(&n.op).map_err(|message| BackendError::Kernel {
                node: node_label(g, id),
                message,
            })?;
            programs.push(control::compile(&n.op, &lir.subgraph_options)?);
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
                    // Shared, not copied, where aligned (a folded weight's mapping).
                    constants.push(AlignedBuf::constant(bytes));
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
        // `RLX_CPU_IN_PLACE_IO=0`: every input copied into the arena and
        // every output out of it (the path of misaligned caller tensors).
        let in_place_io = rlx_ir::env::vars::CPU_IN_PLACE_IO
            .get()
            .ok()
            .flatten()
            .unwrap_or(true);
        if in_place_io {
            bind_caller_tensors(&lir, &mut locs);
        }
        let winograd = winograd_weights::WinogradWeights::plan(&lir, &locs, &constants);
        let packing = packed_weights::Packing::plan(&lir, |n| winograd.overrides_packing(n));
        let widened = widen_on_read::plan(&lir);
        let mut exec = CpuExecutable {
            bound: Bound {
                inputs: vec![false; lir.io.inputs.len()],
                outputs: vec![None; lir.io.outputs.len()],
            },
            arena: AlignedBuf::zeroed(lir.plan.arena_bytes),
            params: (0..lir.io.params.len()).map(|_| None).collect(),
            constants,
            locs,
            dims,
            control: programs,
            packing,
            winograd,
            widened,
            lir,
            profile: Profile::from_env(),
            thread_limit: None,
            stem_pools_fused: 0,
        };
        exec.pack_weights();
        Ok(exec)
    }

    /// How many nodes (convs, max pools, channel concats) write their output in the NCHWc
    /// blocked layout for the nodes that read it (each such edge skips one
    /// reorder into and one transpose out of the layout; see
    /// `nchwc_layout.rs`).
    pub fn nchwc_blocked_outputs(&self) -> usize {
        self.winograd.blocked_outputs()
    }

    /// How many convs run the blocked Winograd F(4,3) kernel (3x3 stride
    /// 1, image and output NCHWc-blocked: `kernels/winograd_blocked.rs`).
    pub fn winograd_blocked_convs(&self) -> usize {
        self.winograd.winograd_blocked_convs()
    }

    /// How many f16 -> f32 casts of params or constants are not run: their
    /// readers (dot_generals) widen the f16 bytes as they load them
    /// (`widen_on_read.rs`).
    pub fn widened_casts(&self) -> usize {
        self.widened.iter().flatten().count()
    }

    /// How many stem convs the last run ran together with their max pool
    /// in bands (`kernels/stem_pool.rs`): the pairs `stem_pool_plan.rs`
    /// made when the executable was built whose bytes allowed it that run.
    pub fn stem_pools_fused(&self) -> usize {
        self.stem_pools_fused
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

    /// One run of the schedule: inputs read in place where [`Loc::Input`]
    /// allows, outputs computed into `outputs` (empty: into the arena) where
    /// [`Loc::Output`] allows.
    fn execute(
        &mut self,
        inputs: &[&HostTensor],
        outputs: &mut [HostTensor],
    ) -> Result<(), BackendError> {
        crate::threads::with_limit(self.thread_limit, || self.execute_here(inputs, outputs))
    }

    /// [`Self::execute`] under the thread limit in force.
    fn execute_here(
        &mut self,
        inputs: &[&HostTensor],
        outputs: &mut [HostTensor],
    ) -> Result<(), BackendError> {
        if let Some(p) = self.params.iter().position(Option::is_none) {
            return Err(BackendError::Signature(format!(
                "param \"{}\" is not set",
                self.lir.io.params[p].1
            )));
        }
        if self.arena.len != self.lir.plan.arena_bytes {
            self.arena = AlignedBuf::zeroed(self.lir.plan.arena_bytes);
        }
        if inputs.len() != self.lir.io.inputs.len() {
            return Err(BackendError::Signature(format!(
                "{} inputs given for {}",
                inputs.len(),
                self.lir.io.inputs.len()
            )));
        }
        for ((_, name, shape), t) in self.lir.io.inputs.iter().zip(inputs) {
            if Some(t.bytes().len()) != shape.size_bytes() {
                return Err(BackendError::Signature(format!(
                    "input \"{name}\": {} bytes given for {shape}",
                    t.bytes().len()
                )));
            }
        }
        self.pack_weights();
        let aligned = |p: *const u8| (p as usize).is_multiple_of(IN_PLACE_ALIGN);
        for (input, t) in inputs.iter().enumerate() {
            let id = self.lir.io.inputs[input].0.index();
            let borrowable = matches!(self.locs[id], Loc::Input { .. });
            self.bound.inputs[input] = borrowable && aligned(t.bytes().as_ptr());
            if let Some((offset, len)) = self.arena_range(id) {
                self.arena.bytes_mut()[offset..offset + len].copy_from_slice(t.bytes());
            }
        }
        for (j, t) in outputs.iter_mut().enumerate() {
            let id = self.lir.io.outputs[j].0.index();
            let bytes = t.bytes_mut();
            let direct = matches!(self.locs[id], Loc::Output { output, .. } if output == j);
            self.bound.outputs[j] =
                (direct && aligned(bytes.as_ptr())).then_some(bytes.as_mut_ptr());
        }
        let places = Places {
            locs: &self.locs,
            bound: &self.bound,
            params: &self.params,
            constants: &self.constants,
            base: self.arena.base(),
            inputs,
        };
        let g = &self.lir.graph;
        // (pool, stem, weight) pairs run as one step this run: those whose
        // bytes allow it.
        let arena = |i: usize| self.bound.arena_range(self.locs[i]);
        let fused: SmallVec<[(NodeId, NodeId, &[f32]); 1]> = (self.winograd.stem_pools())
            .filter(|&(p, s, _)| stem_pool_plan::apart(arena, p.index(), &g.node(s).inputs))
            .collect();
        self.stem_pools_fused = fused.len();
        for &id in &self.lir.schedule {
            if self.lir.plan.runs_nothing(id.index())
                || fused.iter().any(|f| f.1 == id)
                || self.widened[id.index()].is_some()
            {
                // A view, a joined concat, a stem its max pool runs, or a
                // cast its readers widen.
                continue;
            }
            let n = g.node(id);
            // A max pool run with its stem conv reads the conv's inputs.
            let stem_pool = fused.iter().find(|f| f.0 == id);
            let reads = stem_pool.map_or(&n.inputs, |f| &g.node(f.1).inputs);
            // An input the node overwrites in place is read through its output.
            let alias = self.lir.plan.in_place_of(id.index());
            let views: SmallVec<[Option<View>; 4]> = reads
                .iter()
                .map(|&i| {
                    if alias == Some(i.index()) {
                        return None;
                    }
                    // A folded cast's readers read its source.
                    let src = self.widened[i.index()].unwrap_or(i);
                    let (at, len) = places.at(src.index());
                    Some(View {
                        dims: &self.dims[i.index()],
                        dtype: g.shape(src).dtype(),
                        // SAFETY: `at` holds `len` bytes of a live value, and the
                        // planner never lets a live input share bytes with this
                        // output (an input overwritten in place is not viewed:
                        // see `alias`; a caller's tensor is never a node's slot).
                        bytes: unsafe { std::slice::from_raw_parts(at, len) },
                    })
                })
                .collect();
            debug_assert!(
                !matches!(self.locs[id.index()], Loc::Input { .. }),
                "a scheduled node is never a caller's input"
            );
            let (at, len) = places.at(id.index());
            // SAFETY: see above; this place is disjoint from every live input.
            let out_bytes = unsafe { std::slice::from_raw_parts_mut(at, len) };
            let mut out = ViewMut {
                dims: &self.dims[id.index()],
                dtype: n.shape.dtype(),
                bytes: out_bytes,
            };
            let started = self.profile.is_some().then(Instant::now);
            let result = if alias.is_some() {
                kernels::run_in_place(n, &views, &mut out)
            } else {
                let views: SmallVec<[View; 4]> = views.into_iter().flatten().collect();
                match &mut self.control[id.index()] {
                    Some(prog) => control::run(&n.op, prog, &views, &mut out),
                    None => match self
                        .packing
                        .packed_weights(id.index())
                        .filter(|_| !self.winograd.overrides_packing(id.index()))
                    {
                        Some(nr) => match n.op {
                            Op::Conv { .. } | Op::FusedConv { .. } => {
                                kernels::conv::conv_packed_weights(&n.op, nr, &views, &mut out)
                            }
                            _ => kernels::fused::matmul_packed_weights(&n.op, nr, &views, &mut out),
                        },
                        None => match self.winograd.of(id.index()) {
                            Some(prepared) => kernels::conv::conv_prepared_layout(
                                &n.op,
                                prepared,
                                self.winograd.blocked_extras(id.index()),
                                &views,
                                &mut out,
                            ),
                            None if self.winograd.up_conv_blocked(n, id.index()) => {
                                kernels::conv_transpose::conv_transpose_blocked(
                                    &n.op, &views, &mut out,
                                )
                            }
                            None => match self.winograd.pool_layout(n, id.index()) {
                                Some(io) => match stem_pool {
                                    Some(&(_, s, wp)) => {
                                        let (conv, sd) = (&g.node(s).op, &self.dims[s.index()]);
                                        kernels::stem_pool::run(
                                            conv, wp, &n.op, sd, &views, &mut out,
                                        )
                                    }
                                    None => kernels::pool_blocked::run(&n.op, io, &views, &mut out),
                                },
                                None => run_node(n, &views, &mut out),
                            },
                        },
                    },
                }
            };
            result.map_err(|e| e.at(node_label(g, id)))?;
            if let (Some(p), Some(t)) = (self.profile.as_mut(), started) {
                p.record(|| profile_key(g, n), t.elapsed());
            }
        }
        if let Some(p) = self.profile.as_mut() {
            p.end_run();
        }
        Ok(())
    }

    /// The arena range node `idx`'s value occupies in the current run, if
    /// it lies in the arena.
    fn arena_range(&self, idx: usize) -> Option<(usize, usize)> {
        self.bound.arena_range(self.locs[idx])
    }

    /// Node `idx`'s bytes in the current run (`inputs`: the run's inputs).
    fn read<'s>(&'s self, idx: usize, inputs: &'s [&HostTensor]) -> &'s [u8] {
        let places = Places {
            locs: &self.locs,
            bound: &self.bound,
            params: &self.params,
            constants: &self.constants,
            base: self.arena.base_ptr(),
            inputs,
        };
        let (at, len) = places.at(idx);
        // SAFETY: `at` holds `len` bytes of node `idx`'s value (a bound
        // output's tensor stays borrowed by `run_into` while bound); the
        // shared borrow of `self` keeps the arena from changing.
        unsafe { std::slice::from_raw_parts(at, len) }
    }
}

/// Marks the inputs no node overwrites (and their views) as [`Loc::Input`],
/// and the owned, unviewed output nodes as [`Loc::Output`].
fn bind_caller_tensors(lir: &LirModule, locs: &mut [Loc]) {
    let plan = &lir.plan;
    // One pass over the plan: which nodes some node overwrites in place,
    // and which nodes some view aliases.
    let (mut overwritten, mut viewed) = (vec![false; locs.len()], vec![false; locs.len()]);
    for n in 0..locs.len() {
        if let Some(i) = plan.in_place_of(n) {
            overwritten[i] = true;
        }
        if let Some(owner) = plan.view_of.get(n).copied().flatten() {
            viewed[owner] = true;
        }
    }
    // Per node: the input whose bytes it is (the input itself or a view of it).
    let mut input_of = vec![None; locs.len()];
    for (input, (id, _, _)) in lir.io.inputs.iter().enumerate() {
        if !overwritten[id.index()] {
            input_of[id.index()] = Some(input);
        }
    }
    for (n, loc) in locs.iter_mut().enumerate() {
        let root = plan.view_of.get(n).copied().flatten().unwrap_or(n);
        let (Some(input), Loc::Arena { offset, len }) = (input_of[root], *loc) else {
            continue;
        };
        let Some(at) = plan.slots[root].map(|s| s.offset) else {
            continue;
        };
        *loc = Loc::Input {
            input,
            offset: offset - at,
            arena: offset,
            len,
        };
    }
    for (output, (id, _)) in lir.io.outputs.iter().enumerate() {
        let n = id.index();
        let Loc::Arena { offset, len } = locs[n] else {
            continue; // an input, a param, a constant, or listed twice
        };
        if plan.is_view(n) || plan.in_place_of(n).is_some() || viewed[n] || overwritten[n] {
            continue;
        }
        locs[n] = Loc::Output {
            output,
            arena: offset,
            len,
        };
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
        self.execute(inputs, &mut [])?;
        let mut outs = Vec::with_capacity(self.lir.io.outputs.len());
        for (id, shape) in &self.lir.io.outputs {
            let dims = &self.dims[id.index()];
            let bytes = self.read(id.index(), inputs).to_vec();
            outs.push(
                HostTensor::from_bytes(shape.dtype(), dims, bytes)
                    .map_err(|e| BackendError::Signature(e.to_string()))?,
            );
        }
        Ok(outs)
    }

    fn run_into(
        &mut self,
        inputs: &[&HostTensor],
        outputs: &mut [HostTensor],
    ) -> Result<(), BackendError> {
        check_output_tensors(&self.lir.io.outputs, outputs)?;
        let result = self.execute(inputs, outputs);
        // The outputs not computed in place are copied from where they are.
        for (j, (id, _)) in self.lir.io.outputs.iter().enumerate() {
            let direct = matches!(self.locs[id.index()], Loc::Output { output, .. }
                if output == j && self.bound.outputs[j].is_some());
            if result.is_ok() && !direct {
                // A value read here lies in the arena, a param, a constant,
                // an input or another output's tensor: never in tensor `j`.
                outputs[j]
                    .bytes_mut()
                    .copy_from_slice(self.read(id.index(), inputs));
            }
        }
        self.bound.outputs.fill(None);
        result
    }

    fn lir(&self) -> &LirModule {
        &self.lir
    }

    fn limit_threads(&mut self, threads: Option<usize>) -> Result<(), BackendError> {
        if threads == Some(0) {
            return Err(BackendError::Signature(
                "a thread limit must be at least 1 (0 given)".into(),
            ));
        }
        self.thread_limit = threads;
        Ok(())
    }

    fn subgraph_lirs(&self) -> Vec<(NodeId, &LirModule)> {
        self.lir
            .graph
            .ids()
            .zip(&self.control)
            .filter_map(|(id, p)| p.as_ref().map(|p| (id, p)))
            .flat_map(|(id, p)| p.lirs().map(move |l| (id, l)))
            .collect()
    }
}

/// The profile row of `n`: its op and output shape; convs also name their
/// input and weight dims (layers of one output shape differ in both).
fn profile_key(g: &rlx_ir::Graph, n: &rlx_ir::Node) -> String {
    match n.op {
        Op::Conv { .. } | Op::FusedConv { .. } => format!(
            "{} x{:?} w{:?} -> {}",
            n.op.mnemonic(),
            g.shape(n.inputs[0]).dims(),
            g.shape(n.inputs[1]).dims(),
            n.shape
        ),
        _ => format!("{} {}", n.op.mnemonic(), n.shape),
    }
}
