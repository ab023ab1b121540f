//! A LIR schedule on the GPU: one storage buffer holds the arena (the
//! memory plan's offsets, unchanged), then every param and constant, then
//! a failure flag. Each node that runs (not a view or a joined concat,
//! whose parts' dispatches wrote it) is one dispatch of its generated
//! kernel; a run uploads the inputs, records every dispatch in one compute
//! pass and reads back only the outputs (and the flag).

use crate::context::GpuContext;
use crate::kernels::{kernel, NodeCtx};
use crate::wgsl::{Half, Operand};
use rlx_compile::LirModule;
use rlx_driver::{BackendError, Device, Executable};
use rlx_ir::{node_label, HostTensor, NodeId, Op};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

/// Alignment of params and constants in the buffer (wgpu's copy alignment
/// is 4; 256 keeps each region on its own cache lines).
const REGION_ALIGN: u64 = 256;

fn align(n: u64, a: u64) -> u64 {
    n.div_ceil(a) * a
}

/// How a compiled graph computes f16 values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum F16Mode {
    /// WGSL `f16` registers in the elementwise, fused-region and matmul
    /// kernels (matmuls still accumulate in f32) where the adapter has
    /// `shader-f16`; [`F16Mode::Packed`] elsewhere.
    #[default]
    Auto,
    /// f32 registers, each f16 unpacked when loaded and rounded when stored:
    /// what every adapter runs.
    Packed,
}

/// One dispatch: the kernel's pipeline and its workgroup counts.
struct Step {
    pipeline: Arc<wgpu::ComputePipeline>,
    groups: [u32; 3],
}

/// A graph compiled for the wgpu device.
pub struct WgpuExecutable {
    lir: LirModule,
    ctx: Arc<GpuContext>,
    buffer: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    steps: Vec<Step>,
    /// Byte offset of each manifest param's region, and whether it is set.
    params: Vec<(u64, bool)>,
    /// Byte offset of each manifest input's arena slot.
    inputs: Vec<u64>,
    /// Byte offset of each manifest output's value.
    outputs: Vec<u64>,
    flag_byte: u64,
    /// The read-back buffer, made at compile time for a plain run's
    /// outputs and regrown only when a run reads back more.
    staging: wgpu::Buffer,
    /// The read-back layout of a plain run (no param updates) and its bytes.
    plain_reads: Vec<ReadRange>,
    plain_top: u64,
    /// How the run's read-back mapping ended.
    mapped: MapSignal,
    /// The scratch buffer of on-device param updates (kept between runs).
    scratch: Option<wgpu::Buffer>,
    /// How f16 values are computed.
    half: Half,
}

impl std::fmt::Debug for WgpuExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WgpuExecutable({} dispatches on {})",
            self.steps.len(),
            self.ctx.describe()
        )
    }
}

impl WgpuExecutable {
    /// Lays out the buffer, generates and compiles every node's kernel and
    /// uploads the constants. A node without a kernel is
    /// [`BackendError::Unsupported`] naming it and why.
    pub fn new(lir: LirModule, ctx: Arc<GpuContext>) -> Result<WgpuExecutable, BackendError> {
        WgpuExecutable::with_f16_mode(lir, ctx, F16Mode::Auto)
    }

    /// [`WgpuExecutable::new`] computing f16 values as `mode` says.
    pub fn with_f16_mode(
        lir: LirModule,
        ctx: Arc<GpuContext>,
        mode: F16Mode,
    ) -> Result<WgpuExecutable, BackendError> {
        let half = if mode == F16Mode::Auto && ctx.shader_f16 {
            Half::Native
        } else {
            Half::Packed
        };
        let g = &lir.graph;
        let plan = &lir.plan;
        if !plan.alignment.is_multiple_of(4) {
            return Err(BackendError::Signature(format!(
                "the memory plan's alignment {} is not a multiple of 4 bytes",
                plan.alignment
            )));
        }
        let mut top = align(plan.arena_bytes as u64, REGION_ALIGN);
        let mut at = vec![0u64; g.len()];
        let mut params = Vec::new();
        let mut constants = Vec::new();
        for id in g.ids() {
            let n = g.node(id);
            let bytes = n.shape.size_bytes().ok_or_else(|| BackendError::Kernel {
                node: node_label(g, id),
                message: format!("shape {} is not static", n.shape),
            })? as u64;
            at[id.index()] = match &n.op {
                Op::Param { .. } | Op::Constant { .. } => {
                    let here = top;
                    top = align(top + bytes.max(4), REGION_ALIGN);
                    if let Op::Constant { bytes } = &n.op {
                        constants.push((here, bytes.clone()));
                    }
                    here
                }
                _ => plan.slots[id.index()]
                    .map(|s| s.offset as u64)
                    .ok_or_else(|| BackendError::Kernel {
                        node: node_label(g, id),
                        message: "the memory plan gave it no slot".into(),
                    })?,
            };
        }
        for (id, _, _) in &lir.io.params {
            params.push((at[id.index()], false));
        }
        let flag_byte = top;
        let size = flag_byte + 4;
        let max = ctx
            .limits
            .max_storage_buffer_binding_size
            .min(ctx.limits.max_buffer_size);
        if size > max {
            let largest = g
                .ids()
                .max_by_key(|&id| g.shape(id).size_bytes().unwrap_or(0))
                .expect("a graph with a buffer has nodes");
            return Err(BackendError::Kernel {
                node: node_label(g, largest),
                message: format!(
                    "the graph needs a {size}-byte GPU buffer (this node alone {} bytes); {} allows {max}",
                    g.shape(largest).size_bytes().unwrap_or(0),
                    ctx.describe()
                ),
            });
        }
        let max_groups = ctx.limits.max_compute_workgroups_per_dimension;
        let mut steps = Vec::new();
        for &id in &lir.schedule {
            let n = g.node(id);
            if plan.runs_nothing(id.index())
                || matches!(
                    n.op,
                    Op::Input { .. } | Op::Param { .. } | Op::Constant { .. }
                )
            {
                continue;
            }
            let operand = |i: NodeId| Operand {
                byte: at[i.index()],
                dtype: g.shape(i).dtype(),
                dims: g.shape(i).static_dims().unwrap_or_default(),
            };
            let cx = NodeCtx {
                op: &n.op,
                index: id.index(),
                inputs: n.inputs.iter().map(|&i| operand(i)).collect(),
                out: operand(id),
                flag_word: flag_byte / 4,
                half,
            };
            if cx.out.numel() == 0 {
                continue;
            }
            let k = kernel(&cx).map_err(|why| BackendError::Unsupported {
                device: Device::Gpu,
                node: format!("{} ({why})", node_label(g, id)),
            })?;
            if let Some(&d) = k.groups.iter().find(|&&d| d > max_groups) {
                return Err(BackendError::Kernel {
                    node: node_label(g, id),
                    message: format!(
                        "needs {d} workgroups in one dimension; {} allows {max_groups}",
                        ctx.describe()
                    ),
                });
            }
            let pipeline = ctx
                .pipeline(&k.source)
                .map_err(|message| BackendError::Kernel {
                    node: node_label(g, id),
                    message,
                })?;
            steps.push(Step {
                pipeline,
                groups: k.groups,
            });
        }
        let whole_graph = |message: String| BackendError::Kernel {
            node: format!("graph {}", g.name()),
            message,
        };
        let buffer = ctx
            .create_buffer(
                "rlx arena",
                size,
                wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_DST
                    | wgpu::BufferUsages::COPY_SRC,
            )
            .map_err(whole_graph)?;
        let bind_group = ctx
            .checked(|| {
                for (here, bytes) in constants {
                    write_padded(&ctx.queue, &buffer, here, &bytes);
                }
                ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("rlx arena"),
                    layout: &ctx.arena_layout,
                    entries: &[wgpu::BindGroupEntry {
                        binding: 0,
                        resource: buffer.as_entire_binding(),
                    }],
                })
            })
            .map_err(whole_graph)?;
        let inputs: Vec<u64> = lir
            .io
            .inputs
            .iter()
            .map(|(id, _, _)| at[id.index()])
            .collect();
        let outputs: Vec<u64> = lir
            .io
            .outputs
            .iter()
            .map(|(id, _)| at[id.index()])
            .collect();
        let (plain_reads, plain_top) = read_back_plan(&lir, &outputs, &[]);
        let staging = ctx
            .create_buffer("rlx read-back", plain_top, READ_BACK)
            .map_err(whole_graph)?;
        Ok(WgpuExecutable {
            lir,
            ctx,
            buffer,
            bind_group,
            steps,
            params,
            inputs,
            outputs,
            flag_byte,
            staging,
            plain_reads,
            plain_top,
            mapped: MapSignal::default(),
            scratch: None,
            half,
        })
    }

    /// `len` bytes (a multiple of 4) of the buffer from byte `at` (a multiple of 4).
    fn read_range(&self, at: u64, len: u64) -> Result<Vec<u8>, BackendError> {
        let staging = self
            .ctx
            .create_buffer("rlx param read-back", len, READ_BACK)
            .map_err(|m| self.run_error(m))?;
        let mut enc = self.ctx.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(&self.buffer, at, &staging, 0, len);
        self.ctx.queue.submit([enc.finish()]);
        read_back(&self.ctx, &staging, len)
    }

    /// True when f16 values compute in WGSL `f16` registers (see [`F16Mode`]).
    pub fn native_f16(&self) -> bool {
        self.half == Half::Native
    }

    /// Number of kernel dispatches one run records.
    pub fn dispatch_count(&self) -> usize {
        self.steps.len()
    }

    /// Runs once; copies output `j`'s bytes to param `p` on the device for
    /// each `(j, p)` of `updates` (after every kernel ran) and reads back
    /// the other outputs.
    fn execute(
        &mut self,
        inputs: &[&HostTensor],
        updates: &[(usize, usize)],
    ) -> Result<Vec<HostTensor>, BackendError> {
        if let Some(p) = self.params.iter().position(|p| !p.1) {
            return Err(BackendError::Signature(format!(
                "param \"{}\" is not set",
                self.lir.io.params[p].1
            )));
        }
        if inputs.len() != self.inputs.len() {
            return Err(BackendError::Signature(format!(
                "{} inputs given for {}",
                inputs.len(),
                self.inputs.len()
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
        // (A persistent MAP_WRITE upload buffer copied by the run's own
        // command buffer measured slower on lavapipe than wgpu's
        // write_buffer staging: 4.0-4.4x vs 3.0-3.7x the empty submit.)
        for (t, &here) in inputs.iter().zip(&self.inputs) {
            write_padded(&self.ctx.queue, &self.buffer, here, t.bytes());
        }

        // A plain run reads back what compiling laid out; only a run with
        // param updates plans (and maybe grows) its own read-back.
        let custom =
            (!updates.is_empty()).then(|| read_back_plan(&self.lir, &self.outputs, updates));
        let top = custom.as_ref().map_or(self.plain_top, |c| c.1);
        if self.staging.size() < top {
            self.staging = self
                .ctx
                .create_buffer("rlx read-back", top, READ_BACK)
                .map_err(|m| self.run_error(m))?;
        }
        let moves = self.param_moves(updates)?;

        // One encoder, one compute pass, one submit; the bind group,
        // pipelines and buffers were made at compile time. The flag is zero
        // here (the buffer starts zeroed and a failed run clears it).
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: None,
            });
            pass.set_bind_group(0, &self.bind_group, &[]);
            for s in &self.steps {
                pass.set_pipeline(&s.pipeline);
                pass.dispatch_workgroups(s.groups[0], s.groups[1], s.groups[2]);
            }
        }
        let ranges: &[ReadRange] = custom.as_ref().map_or(&self.plain_reads, |c| &c.0);
        enc.copy_buffer_to_buffer(&self.buffer, self.flag_byte, &self.staging, 0, 4);
        for r in ranges {
            if r.span > 0 {
                enc.copy_buffer_to_buffer(&self.buffer, r.start, &self.staging, r.dst, r.span);
            }
        }
        if let (Some(scratch), false) = (self.scratch.as_ref(), moves.is_empty()) {
            let mut at = 0;
            for &(from, _, len) in &moves {
                enc.copy_buffer_to_buffer(&self.buffer, from, scratch, at, len);
                at += len;
            }
            at = 0;
            for &(_, to, len) in &moves {
                enc.copy_buffer_to_buffer(scratch, at, &self.buffer, to, len);
                at += len;
            }
        }
        self.ctx.queue.submit([enc.finish()]);

        // One poll waits for the run and resolves the read-back mapping
        // (its callback sets a flag made at compile time: no channel).
        let read = &self.mapped;
        read.reset();
        let done = read.clone();
        self.staging
            .map_async(wgpu::MapMode::Read, ..top, move |r| done.set(r.is_ok()));
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| self.run_error(format!("waiting for the GPU: {e}")))?;
        // Another thread polling the same device may have taken this map's
        // callback and not run it yet (seen with tests in parallel on one
        // context): wait a little for it before calling the map failed.
        let mut waited = 0;
        while read.get().is_none() && waited < 2000 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            self.ctx
                .device
                .poll(wgpu::PollType::Poll)
                .map_err(|e| self.run_error(format!("waiting for the GPU: {e}")))?;
            waited += 1;
        }
        // Errors of the submit reach the uncaptured-error handler, not a panic.
        let faults = self.ctx.take_faults();
        if read.get() != Some(true) || !faults.is_empty() {
            if read.get() == Some(true) {
                self.staging.unmap(); // mapped for a run that failed: free for the next
            }
            let why = if faults.is_empty() {
                "the GPU read-back could not be mapped".to_string()
            } else {
                faults.join("; ")
            };
            return Err(self.run_error(why));
        }
        let view = self
            .staging
            .get_mapped_range(..top)
            .map_err(|e| self.run_error(format!("reading the GPU read-back: {e}")))?;
        let flag = u32::from_le_bytes(view[0..4].try_into().expect("4 bytes"));
        // Outputs are built only when no kernel raised the flag.
        let outputs = (flag == 0).then(|| {
            let manifest = &self.lir.io.outputs;
            ranges
                .iter()
                .map(|r| {
                    let shape = &manifest[r.output].1;
                    let from = (r.dst + r.skew) as usize;
                    HostTensor::from_bytes(
                        shape.dtype(),
                        &shape.static_dims().unwrap_or_default(),
                        view[from..from + r.len as usize].to_vec(),
                    )
                    .map_err(|e| BackendError::Signature(format!("output {}: {e}", r.output)))
                })
                .collect::<Result<Vec<_>, _>>()
        });
        drop(view);
        self.staging.unmap();
        outputs.unwrap_or_else(|| {
            self.ctx
                .queue
                .write_buffer(&self.buffer, self.flag_byte, &[0; 4]);
            Err(BackendError::Kernel {
                node: node_label(&self.lir.graph, NodeId(flag - 1)),
                message: "an index was out of range or a value did not fit in 32 bits".into(),
            })
        })
    }

    /// The `(from, to, len)` copies of `updates` (output `j` to param `p`),
    /// with the scratch buffer they pass through grown to hold them; none
    /// (no allocation) for a plain run.
    fn param_moves(
        &mut self,
        updates: &[(usize, usize)],
    ) -> Result<Vec<(u64, u64, u64)>, BackendError> {
        if updates.is_empty() {
            return Ok(Vec::new());
        }
        // Updated params go through a scratch buffer (wgpu copies never
        // have the same buffer at both ends), all reads before any write.
        let manifest = &self.lir.io.outputs;
        let moves: Vec<(u64, u64, u64)> = updates
            .iter()
            .map(|&(j, p)| {
                let len = align(manifest[j].1.size_bytes().unwrap_or(0) as u64, 4);
                (self.outputs[j], self.params[p].0, len)
            })
            .filter(|m| m.2 > 0)
            .collect();
        let scratch_len: u64 = moves.iter().map(|m| m.2).sum();
        if scratch_len > 0 && self.scratch.as_ref().is_none_or(|b| b.size() < scratch_len) {
            let usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            let scratch = self
                .ctx
                .create_buffer("rlx param updates", scratch_len, usage)
                .map_err(|m| self.run_error(m))?;
            self.scratch = Some(scratch);
        }
        Ok(moves)
    }

    /// A failure of a run that no single node caused.
    fn run_error(&self, message: String) -> BackendError {
        BackendError::Kernel {
            node: format!("a run of graph {}", self.lir.graph.name()),
            message,
        }
    }
}

/// How one buffer mapping ended, set by wgpu's callback during the run's
/// poll: made once per executable, so a run allocates no channel.
#[derive(Clone, Default)]
struct MapSignal(Arc<AtomicU8>);

impl MapSignal {
    const PENDING: u8 = 0;
    const OK: u8 = 1;
    const FAILED: u8 = 2;

    fn reset(&self) {
        self.0.store(Self::PENDING, Ordering::Release);
    }

    fn set(&self, ok: bool) {
        let v = if ok { Self::OK } else { Self::FAILED };
        self.0.store(v, Ordering::Release);
    }

    /// `None` while pending.
    fn get(&self) -> Option<bool> {
        match self.0.load(Ordering::Acquire) {
            Self::PENDING => None,
            v => Some(v == Self::OK),
        }
    }
}

/// Usage of read-back buffers.
const READ_BACK: wgpu::BufferUsages =
    wgpu::BufferUsages::MAP_READ.union(wgpu::BufferUsages::COPY_DST);

/// Where one returned output lands in the read-back buffer.
struct ReadRange {
    /// Manifest output index.
    output: usize,
    /// Its first byte in the read-back buffer.
    dst: u64,
    /// Its first word-aligned byte in the arena.
    start: u64,
    /// Bytes copied (whole words).
    span: u64,
    /// Bytes from `start` to the value.
    skew: u64,
    /// The value's bytes.
    len: u64,
}

/// The read-back layout of a run: the flag word, then every output not
/// written over a param by `updates`; and the bytes it needs.
fn read_back_plan(
    lir: &LirModule,
    outputs: &[u64],
    updates: &[(usize, usize)],
) -> (Vec<ReadRange>, u64) {
    let mut ranges = Vec::new();
    let mut top = 4u64;
    for (j, ((_, shape), &here)) in lir.io.outputs.iter().zip(outputs).enumerate() {
        if updates.iter().any(|u| u.0 == j) {
            continue;
        }
        let len = shape.size_bytes().unwrap_or(0) as u64;
        let start = here / 4 * 4;
        let span = align(here + len, 4) - start;
        ranges.push(ReadRange {
            output: j,
            dst: top,
            start,
            span,
            skew: here - start,
            len,
        });
        top += span;
    }
    (ranges, top)
}

/// Writes `bytes` at `offset`, padded with zeros to wgpu's 4-byte copy size.
fn write_padded(queue: &wgpu::Queue, buffer: &wgpu::Buffer, offset: u64, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    if bytes.len().is_multiple_of(4) {
        queue.write_buffer(buffer, offset, bytes);
    } else {
        let mut padded = bytes.to_vec();
        padded.resize(align(bytes.len() as u64, 4) as usize, 0);
        queue.write_buffer(buffer, offset, &padded);
    }
}

/// Maps `staging` and copies its first `len` bytes out.
fn read_back(ctx: &GpuContext, staging: &wgpu::Buffer, len: u64) -> Result<Vec<u8>, BackendError> {
    let (tx, rx) = std::sync::mpsc::channel();
    staging.map_async(wgpu::MapMode::Read, ..len, move |r| {
        let _ = tx.send(r);
    });
    ctx.device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| BackendError::Signature(format!("waiting for the GPU: {e}")))?;
    rx.recv()
        .map_err(|_| BackendError::Signature("the GPU read-back was dropped".into()))?
        .map_err(|e| BackendError::Signature(format!("mapping the GPU read-back: {e}")))?;
    let bytes = staging
        .get_mapped_range(..len)
        .map_err(|e| BackendError::Signature(format!("reading the GPU read-back: {e}")))?
        .to_vec();
    staging.unmap();
    Ok(bytes)
}

impl Executable for WgpuExecutable {
    fn set_param(&mut self, index: usize, value: &HostTensor) -> Result<(), BackendError> {
        let Some((_, name, shape)) = self.lir.io.params.get(index) else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range"
            )));
        };
        if Some(value.bytes().len()) != shape.size_bytes() {
            return Err(BackendError::Signature(format!(
                "param \"{name}\": {} bytes given for {shape}",
                value.bytes().len()
            )));
        }
        write_padded(
            &self.ctx.queue,
            &self.buffer,
            self.params[index].0,
            value.bytes(),
        );
        self.params[index].1 = true;
        Ok(())
    }

    fn run(&mut self, inputs: &[&HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        self.execute(inputs, &[])
    }

    fn run_updating(
        &mut self,
        inputs: &[&HostTensor],
        updates: &[(usize, usize)],
    ) -> Result<Vec<HostTensor>, BackendError> {
        let n = self.outputs.len();
        if let Some(&(j, p)) = updates
            .iter()
            .find(|u| u.0 >= n || u.1 >= self.params.len())
        {
            return Err(BackendError::Signature(format!(
                "update output {j} -> param {p} out of range ({n} outputs, {} params)",
                self.params.len()
            )));
        }
        self.execute(inputs, updates)
    }

    fn write_param_bytes(
        &mut self,
        index: usize,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        let Some(&(here, _)) = self.params.get(index) else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range"
            )));
        };
        let (_, name, shape) = &self.lir.io.params[index];
        let size = shape.size_bytes().unwrap_or(0);
        if offset + bytes.len() > size {
            return Err(BackendError::Signature(format!(
                "param \"{name}\": {} bytes at offset {offset} run past its {size} bytes",
                bytes.len()
            )));
        }
        if bytes.is_empty() {
            return Ok(());
        }
        // wgpu writes whole words: a ragged range is merged into the words it touches.
        let start = offset as u64 / 4 * 4;
        let end = align((offset + bytes.len()) as u64, 4);
        let mut words = if start == offset as u64 && end == (offset + bytes.len()) as u64 {
            bytes.to_vec()
        } else {
            let mut w = self.read_range(here + start, end - start)?;
            let skew = offset - start as usize;
            w[skew..skew + bytes.len()].copy_from_slice(bytes);
            w
        };
        words.resize((end - start) as usize, 0);
        self.ctx
            .queue
            .write_buffer(&self.buffer, here + start, &words);
        self.params[index].1 = true;
        Ok(())
    }

    fn alloc_param(&mut self, index: usize) -> Result<(), BackendError> {
        let Some(shape) = self.lir.io.params.get(index).map(|p| p.2.clone()) else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range"
            )));
        };
        let zeros = HostTensor::zeros(shape.dtype(), &shape.static_dims().unwrap_or_default());
        self.set_param(index, &zeros)
    }

    fn param_value(&self, index: usize) -> Result<HostTensor, BackendError> {
        let Some(&(here, set)) = self.params.get(index) else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range"
            )));
        };
        let shape = &self.lir.io.params[index].2;
        if !set {
            return Err(BackendError::Signature(format!(
                "param \"{}\" is not set",
                self.lir.io.params[index].1
            )));
        }
        let len = shape.size_bytes().unwrap_or(0) as u64;
        let bytes = self.read_range(here, align(len.max(4), 4))?;
        HostTensor::from_bytes(
            shape.dtype(),
            &shape.static_dims().unwrap_or_default(),
            bytes[..len as usize].to_vec(),
        )
        .map_err(|e| BackendError::Signature(format!("param {index}: {e}")))
    }

    fn lir(&self) -> &LirModule {
        &self.lir
    }
}
