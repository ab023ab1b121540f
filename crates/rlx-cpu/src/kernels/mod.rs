//! CPU kernels: one module per op family, each a function over
//! [`View`]s of its inputs writing one [`ViewMut`] output.
//!
//! Float kernels are written for [`Real`] (f32, f64); F16 / BF16 inputs are
//! widened to f32, computed, and narrowed (`run_widened`), so those types
//! compute and accumulate in f32. SIMD and CPU-feature dispatch belong in
//! this layer only.

/// A formatted kernel failure, as whichever error type the context wants
/// (`String` or [`KernelError`]): `Err(fail!("..."))`.
macro_rules! fail {
    ($($arg:tt)*) => {
        ::std::convert::Into::into(::std::format!($($arg)*))
    };
}

/// Runs `$body` with `$T` bound to an unsigned type of the dtype's width.
macro_rules! by_width {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype.size_bytes() {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}

pub mod attention;
#[cfg(test)]
mod cnn_fixtures;
pub(crate) mod control;
pub(crate) mod conv;
mod conv2d;
mod conv_depthwise3x3;
#[cfg(target_arch = "x86_64")]
mod conv_depthwise_in_place;
pub(crate) mod conv_depthwise_small;
mod conv_direct;
mod conv_epilogue;
mod conv_im2col;
pub(crate) mod conv_nchwc;
pub(crate) mod conv_packed;
pub(crate) mod conv_pointwise;
pub(crate) mod conv_pointwise_blocked;
#[cfg(test)]
mod conv_roofline;
pub(crate) mod conv_stem;
pub(crate) mod conv_transpose;
mod conv_transpose_up2;
pub(crate) mod elementwise;
pub(crate) mod fastmath;
pub(crate) mod fft;
pub mod fused;
pub mod gemm;
pub(crate) mod gemm_bf16;
pub mod gemm_blocked;
pub mod gemm_packed;
mod gemm_tile;
pub(crate) mod gemv;
pub(crate) mod indexing;
pub mod linalg;
pub mod movement;
pub(crate) mod norm;
pub(crate) mod pool;
pub(crate) mod pool_blocked;
pub mod quant_matmul;
pub(crate) mod reduce;
pub mod region;
pub(crate) mod scalar;
mod silu_exact;
mod small_rows;
mod softmax_rows;
pub(crate) mod stem_pool;
mod transpose16;
pub(crate) mod upsample;
pub(crate) mod winograd;
pub(crate) mod winograd_blocked;

use half::{bf16, f16};
use rlx_ir::{DType, Node, Op};
pub use scalar::{Pod, Real};

/// Runs `node` over its output's current bytes: the inputs given as `None`
/// are the buffer the memory plan lets it overwrite (see
/// `rlx_compile::MemoryPlan::in_place`).
pub(crate) fn run_in_place(node: &Node, ins: &[Option<View>], out: &mut ViewMut) -> KernelResult {
    if let Op::AddNorm {
        axis,
        eps,
        rms,
        keep_sum,
    } = node.op
    {
        return fused::add_norm_in_place(axis, eps, rms, keep_sum, ins, out);
    }
    match region::steps_of_op(&node.op, ins.len()) {
        Some(steps) => region::in_place(&steps, ins, out),
        None => Err(fail!("{} cannot run in place", node.op.mnemonic())),
    }
}

/// The error of a kernel handed a storage-only dtype
/// ([`DType::is_storage_only`]); [`crate::CpuExecutable::new`] refuses such
/// graphs first, so this only guards the kernels.
pub(crate) fn storage_only(op: &str, dtype: DType) -> KernelError {
    KernelError::Message(format!(
        "{op} does not compute on {dtype}, a storage-only dtype (cast it to a compute dtype first)"
    ))
}

/// A kernel failure; the executor adds the node label.
pub type KernelResult = Result<(), KernelError>;

/// Why a kernel failed. The executor turns it into a
/// [`rlx_driver::BackendError`] naming the node, keeping any inner error
/// as the source.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KernelError {
    /// A failure the kernel describes itself (bad operands, an index out of range).
    #[error("{0}")]
    Message(String),
    /// A control-flow sub-graph (`then` / `else` / `cond` / `body`) failed to run.
    #[error("{role} sub-graph: {source}")]
    SubGraph {
        /// The sub-graph's role.
        role: &'static str,
        /// The sub-graph executable's error.
        #[source]
        source: rlx_ir::SourceBox<rlx_driver::BackendError>,
    },
    /// An error of another layer (the IR, a codec), kept whole.
    #[error(transparent)]
    Source(rlx_ir::ErrorSource),
}

impl From<String> for KernelError {
    fn from(message: String) -> Self {
        KernelError::Message(message)
    }
}

impl From<&str> for KernelError {
    fn from(message: &str) -> Self {
        KernelError::Message(message.to_string())
    }
}

impl From<rlx_ir::IrError> for KernelError {
    fn from(e: rlx_ir::IrError) -> Self {
        KernelError::Source(rlx_ir::ErrorSource::new(e))
    }
}

impl From<rlx_gguf::GgufError> for KernelError {
    fn from(e: rlx_gguf::GgufError) -> Self {
        KernelError::Source(rlx_ir::ErrorSource::new(e))
    }
}

impl KernelError {
    /// The [`rlx_driver::BackendError`] of this failure at node `node` (its label).
    pub fn at(self, node: String) -> rlx_driver::BackendError {
        use rlx_driver::BackendError;
        match self {
            KernelError::Message(message) => BackendError::Kernel { node, message },
            KernelError::SubGraph { role, source } => BackendError::SubGraph {
                node,
                role: role.to_string(),
                source,
            },
            KernelError::Source(source) => BackendError::KernelSource { node, source },
        }
    }
}

/// A read-only tensor view: dims, dtype, bytes.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// Dims.
    pub dims: &'a [usize],
    /// Dtype.
    pub dtype: DType,
    /// Little-endian bytes, `numel * width` long, aligned for the dtype.
    pub bytes: &'a [u8],
}

/// A writable tensor view.
pub struct ViewMut<'a> {
    /// Dims.
    pub dims: &'a [usize],
    /// Dtype.
    pub dtype: DType,
    /// Bytes to fill.
    pub bytes: &'a mut [u8],
}

fn cast_slice<T: Pod>(b: &[u8]) -> &[T] {
    let w = std::mem::size_of::<T>();
    assert!(
        b.len().is_multiple_of(w)
            && (b.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()),
        "misaligned tensor view"
    );
    // SAFETY: T is Pod, the length is a multiple of its size and the pointer is aligned.
    unsafe { std::slice::from_raw_parts(b.as_ptr() as *const T, b.len() / w) }
}

fn cast_slice_mut<T: Pod>(b: &mut [u8]) -> &mut [T] {
    let w = std::mem::size_of::<T>();
    assert!(
        b.len().is_multiple_of(w)
            && (b.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()),
        "misaligned tensor view"
    );
    // SAFETY: as in cast_slice, and the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut T, b.len() / w) }
}

impl<'a> View<'a> {
    /// The elements as `T` (which must match the dtype's width).
    pub fn slice<T: Pod>(&self) -> &'a [T] {
        cast_slice(self.bytes)
    }
    /// Element count.
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }
}

impl<'a> ViewMut<'a> {
    /// The elements as `T`.
    pub fn slice<T: Pod>(&mut self) -> &mut [T] {
        cast_slice_mut(self.bytes)
    }
    /// Element count.
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }
}

/// Values of a float view as f32 (F16 / BF16 / F32), by half's slice
/// conversions (F16C 8 values at a time where the CPU has it: element by
/// element, ~2 ns a value, widening a 256-slot f16 KV cache took most of a
/// prefill piece's attention product).
pub(crate) fn widen_f32(v: &View) -> Vec<f32> {
    use half::slice::HalfFloatSliceExt;
    match v.dtype {
        DType::F32 => v.slice::<f32>().to_vec(),
        DType::F16 => v.slice::<f16>().to_f32_vec(),
        DType::BF16 => v.slice::<bf16>().to_f32_vec(),
        d => panic!("widen_f32 of {d}"),
    }
}

/// Runs an f32 kernel on F16 / BF16 data: widens every F16 / BF16 input to
/// f32, runs `f` into an f32 output of the same dims, narrows the result.
pub(crate) fn run_widened(
    ins: &[View],
    out: &mut ViewMut,
    f: impl FnOnce(&[View], &mut ViewMut) -> KernelResult,
) -> KernelResult {
    let low = |d: DType| matches!(d, DType::F16 | DType::BF16);
    let wide: Vec<Vec<f32>> = ins
        .iter()
        .map(|v| {
            if low(v.dtype) {
                widen_f32(v)
            } else {
                Vec::new()
            }
        })
        .collect();
    let views: Vec<View> = ins
        .iter()
        .zip(&wide)
        .map(|(v, w)| {
            if low(v.dtype) {
                View {
                    dims: v.dims,
                    dtype: DType::F32,
                    bytes: f32_bytes(w),
                }
            } else {
                *v
            }
        })
        .collect();
    if !low(out.dtype) {
        return f(&views, out);
    }
    let mut tmp = vec![0f32; out.numel()];
    f(
        &views,
        &mut ViewMut {
            dims: out.dims,
            dtype: DType::F32,
            bytes: f32_bytes_mut(&mut tmp),
        },
    )?;
    match out.dtype {
        DType::F16 => out
            .slice::<f16>()
            .iter_mut()
            .zip(&tmp)
            .for_each(|(o, &x)| *o = f16::from_f32(x)),
        _ => out
            .slice::<bf16>()
            .iter_mut()
            .zip(&tmp)
            .for_each(|(o, &x)| *o = bf16::from_f32(x)),
    }
    Ok(())
}

/// The bytes of an f32 slice.
pub fn f32_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding or invalid bit patterns as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// The bytes of an f32 slice, mutably.
pub fn f32_bytes_mut(v: &mut [f32]) -> &mut [u8] {
    // SAFETY: as above; any byte pattern is a valid f32.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v)) }
}

/// Dispatches `f` on the real float type of `dtype` (f32 / f64), widening F16 / BF16.
#[macro_export]
macro_rules! with_real {
    ($dtype:expr, $ins:expr, $out:expr, |$i:ident, $o:ident| $body:expr; $T:ident) => {
        match $dtype {
            rlx_ir::DType::F32 => {
                type $T = f32;
                let ($i, $o) = ($ins, $out);
                $body
            }
            rlx_ir::DType::F64 => {
                type $T = f64;
                let ($i, $o) = ($ins, $out);
                $body
            }
            rlx_ir::DType::F16 | rlx_ir::DType::BF16 => {
                $crate::kernels::run_widened($ins, $out, |$i, $o| {
                    type $T = f32;
                    $body
                })
            }
            d => Err(format!("not defined for dtype {d}").into()),
        }
    };
}

/// Runs the kernel of `node` over its input views into `out`.
pub(crate) fn run_node(node: &Node, ins: &[View], out: &mut ViewMut) -> KernelResult {
    match &node.op {
        Op::Input { .. } | Op::Param { .. } | Op::Constant { .. } => Ok(()),
        Op::Unary(u) => elementwise::unary(*u, ins, out),
        Op::Binary(b) => elementwise::binary(*b, ins, out),
        Op::Compare(c) => elementwise::compare(*c, ins, out),
        Op::Select => elementwise::select(ins, out),
        Op::Cast => elementwise::cast(ins, out),
        Op::MatMul => linalg::matmul(ins, out),
        Op::DotGeneral(d) => linalg::dot_general(d, ins, out),
        Op::Reduce { op, axes, .. } => reduce::reduce(*op, axes, ins, out),
        Op::ArgReduce { op, axis, .. } => reduce::arg_reduce(*op, *axis, ins, out),
        Op::Cumsum {
            axis,
            exclusive,
            reverse,
        } => reduce::cumsum(*axis, *exclusive, *reverse, ins, out),
        Op::Reshape => movement::reshape(ins, out),
        Op::Transpose { perm } => movement::transpose(perm, ins, out),
        Op::Slice(spec) => movement::slice(spec, ins, out),
        Op::Concat { axis } => movement::concat(*axis, ins, out),
        Op::Pad { pads, mode } => movement::pad(pads, mode, ins, out),
        Op::Broadcast => movement::broadcast(ins, out),
        Op::Gather { axis } => indexing::gather(*axis, ins, out),
        Op::GatherElements { axis } => indexing::gather_elements(*axis, ins, out),
        Op::ScatterAdd { axis } => indexing::scatter_add(*axis, ins, out),
        Op::TopK {
            k,
            axis,
            largest,
            output,
        } => indexing::topk(*k, *axis, *largest, *output, ins, out),
        Op::Iota { axis, start, step } => indexing::iota(*axis, *start, *step, out),
        Op::Softmax { axis } => norm::softmax(*axis, false, ins, out),
        Op::LogSoftmax { axis } => norm::softmax(*axis, true, ins, out),
        Op::LayerNorm { axis, eps } => norm::layer_norm(*axis, *eps, ins, out),
        Op::RmsNorm { eps } => norm::rms_norm(*eps, ins, out),
        Op::GroupNorm { groups, eps } => norm::group_norm(*groups, *eps, ins, out),
        Op::Attention {
            mask,
            scale,
            softcap,
            layout,
        } => attention::attention(*mask, *scale, *softcap, *layout, ins, out),
        Op::Rope { interleaved } => attention::rope(*interleaved, ins, out),
        Op::Conv { window, groups } => conv::conv(window, *groups, ins, out),
        Op::ConvTranspose {
            window,
            output_padding,
            groups,
        } => conv_transpose::conv_transpose(window, output_padding, *groups, ins, out),
        Op::Pool {
            kind,
            window,
            count_include_pad,
        } => pool::pool(*kind, window, *count_include_pad, ins, out),
        Op::Upsample {
            mode,
            align_corners,
        } => upsample::upsample(*mode, *align_corners, ins, out),
        Op::Fft { kind, norm } => fft::fft(*kind, *norm, ins, out),
        Op::ElementwiseRegion { steps } => region::region(steps, ins, out),
        Op::FusedMatMul { epilogue } => fused::fused_matmul(epilogue, ins, out),
        Op::FusedConv {
            window,
            groups,
            bias,
            epilogue,
        } => conv::fused_conv(window, *groups, *bias, epilogue, ins, out),
        Op::AddNorm {
            axis,
            eps,
            rms,
            keep_sum,
        } => fused::add_norm(*axis, *eps, *rms, *keep_sum, ins, out),
        Op::GatedMatMul { act } => fused::gated_matmul(*act, ins, out),
        Op::Dequantize { scheme } => quant_matmul::dequantize(*scheme, ins, out),
        Op::DequantMatMul { scheme, n, k } => {
            quant_matmul::dequant_matmul(*scheme, *n, *k, ins, out)
        }
        Op::TupleGet { offset, .. } => control::tuple_get(*offset, ins, out),
        Op::Custom(c) => custom(c, ins, out),
        Op::If(_) | Op::While(_) | Op::Scan(_) | Op::CustomFn(_) => {
            Err("a control op runs through its compiled sub-graphs (kernels::control::run)".into())
        }
    }
}

/// A custom op: its extension's CPU kernel over the same bytes.
fn custom(c: &rlx_ir::custom::CustomOp, ins: &[View], out: &mut ViewMut) -> KernelResult {
    use rlx_ir::custom::{KernelArg, KernelOut};
    if let Some(r) = crate::splat::run(c, ins, out) {
        return r;
    }
    let ext = c.extension()?;
    let kernel = ext
        .kernel("cpu")
        .ok_or_else(|| format!("custom op `{}` registers no cpu kernel", c.name))?;
    let args: Vec<KernelArg> = ins
        .iter()
        .map(|v| KernelArg {
            dims: v.dims,
            dtype: v.dtype,
            bytes: v.bytes,
        })
        .collect();
    let mut o = KernelOut {
        dims: out.dims,
        dtype: out.dtype,
        bytes: out.bytes,
    };
    kernel(c, &args, &mut o).map_err(|e| KernelError::Message(format!("{}: {e}", c.name)))
}

/// Element offsets of `dims`-shaped data read through `strides` (elements;
/// 0 on broadcast axes), in row-major order of `dims`. Calls `f(out_index, in_offset)`.
pub(crate) fn for_each_strided(
    dims: &[usize],
    strides: &[isize],
    base: isize,
    mut f: impl FnMut(usize, isize),
) {
    let n: usize = dims.iter().product();
    if n == 0 {
        return;
    }
    let r = dims.len();
    if r == 0 {
        f(0, base);
        return;
    }
    let mut idx = vec![0usize; r];
    let mut off = base;
    let inner = dims[r - 1];
    let s_inner = strides[r - 1];
    let mut o = 0usize;
    loop {
        let mut p = off;
        for _ in 0..inner {
            f(o, p);
            o += 1;
            p += s_inner;
        }
        // advance the outer index
        let mut ax = r - 1;
        loop {
            if ax == 0 {
                return;
            }
            ax -= 1;
            idx[ax] += 1;
            off += strides[ax];
            if idx[ax] < dims[ax] {
                break;
            }
            off -= strides[ax] * dims[ax] as isize;
            idx[ax] = 0;
        }
    }
}

/// Strides (elements) to read an input of `in_dims` broadcast to `out_dims` (numpy rules).
pub(crate) fn broadcast_strides(in_dims: &[usize], out_dims: &[usize]) -> Vec<isize> {
    let off = out_dims.len() - in_dims.len();
    let cs = rlx_ir::contiguous_strides(in_dims);
    (0..out_dims.len())
        .map(|i| {
            if i < off || in_dims[i - off] == 1 {
                0
            } else {
                cs[i - off] as isize
            }
        })
        .collect()
}
