//! The launch plan: an [`rlx_compile::LirModule`] turned into a list of [`Step`]s, each
//! a kernel launch of [`crate::launch`]'s modules or one cuBLAS GEMM, over
//! byte offsets of one arena (the memory plan's slots, unchanged), the
//! params and the constants. Pure Rust: planning makes no CUDA call, so it
//! is built and checked ([`LaunchPlan::check`]) on any machine; the runner
//! ([`crate::executor`]) only interprets it.
//!
//! Views of the memory plan (reshapes, contiguous narrows) are no step:
//! their bytes already lie inside the buffer they view. A node, op or dtype
//! without a CUDA kernel is [`rlx_driver::BackendError::Unsupported`]
//! naming the node, op and dtype.

mod build;
mod check;
mod dump;
mod fused;
mod gemm;
mod indexing;
mod updates;

pub use build::plan;
pub use check::PlanFault;
pub use updates::{ParamWrite, UpdatePlan, UpdateRule};

use crate::geometry::{PadLayout, Resize, Window2d};
use crate::kernels::{BinaryOp, ReduceOp, UnaryOp};
use rlx_ir::{DType, NodeId};

/// Which device buffer a value lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// The arena of the memory plan (inputs and every computed value).
    Arena,
    /// Param number `i` of the I/O manifest (its own buffer).
    Param(usize),
    /// Constant number `i` of [`LaunchPlan::constants`] (its own buffer).
    Const(usize),
}

/// A node's value on the device: where its bytes start and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buf {
    /// The node whose value this is.
    pub node: NodeId,
    /// The node whose step writes these bytes: `node` itself, or for a
    /// view (reshape, contiguous narrow) the buffer it aliases.
    pub owner: NodeId,
    /// Its buffer.
    pub region: Region,
    /// Byte offset in that buffer.
    pub byte: usize,
    /// Byte length.
    pub bytes: usize,
    /// Element type.
    pub dtype: DType,
}

impl Kernel {
    /// True for the kernels that bounds-check indices on the device and
    /// report a bad one through a flag the runner reads back.
    pub fn checks_indices(&self) -> bool {
        matches!(
            self,
            Kernel::Gather { .. } | Kernel::GatherElements(_) | Kernel::ScatterAdd(_)
        )
    }
}

impl Buf {
    /// Elements it holds.
    pub fn numel(&self) -> usize {
        self.bytes / self.dtype.size_bytes().max(1)
    }
}

/// One strided copy of `rlx_strided_copy_b<width>`: element `i` of `dims`
/// (row-major) moves from `x[x_offset + i·x_strides]` to
/// `y[y_offset + i·y_strides]` (element units).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyPiece {
    /// The iteration dims.
    pub dims: Vec<usize>,
    /// Source strides (0 along a broadcast axis, negative for a reversed slice).
    pub x_strides: Vec<i64>,
    /// Destination strides.
    pub y_strides: Vec<i64>,
    /// First source element.
    pub x_offset: i64,
    /// First destination element.
    pub y_offset: i64,
}

/// A row-major (strided-batched) GEMM: for each of `batch`,
/// `c[m, n] = op(a) @ op(b)`, `a` stored `[m, k]` (`[k, m]` when
/// `trans_a`), `b` stored `[k, n]` (`[n, k]` when `trans_b`); a batch
/// stride of 0 reuses one matrix for every batch (a broadcast).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmSpec {
    /// Batch count.
    pub batch: usize,
    /// Rows of c.
    pub m: usize,
    /// Contracted length.
    pub k: usize,
    /// Columns of c.
    pub n: usize,
    /// a is stored transposed.
    pub trans_a: bool,
    /// b is stored transposed.
    pub trans_b: bool,
    /// Elements between a's matrices (0: broadcast).
    pub stride_a: usize,
    /// Elements between b's matrices (0: broadcast).
    pub stride_b: usize,
}

/// The epilogues cuBLASLt fuses into a GEMM (a bias per output column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Epilogue {
    /// `+ bias`.
    Bias,
    /// `relu(· + bias)`.
    BiasRelu,
    /// `gelu_tanh(· + bias)` (the tanh approximation, cuBLASLt's GELU).
    BiasGeluTanh,
}

/// Per-element indexing along one axis (`rlx_gather_elements_*`,
/// `rlx_scatter_add_*`): element `i` of the index tensor (row-major over
/// `dims`) addresses data element `i·data_strides + index·axis_stride`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AxisIndex {
    /// The index tensor's dims (the output's for a gather).
    pub dims: Vec<usize>,
    /// The data's strides over `dims`, 0 on the indexed axis.
    pub data_strides: Vec<i64>,
    /// The data's stride along the indexed axis.
    pub axis_stride: i64,
    /// The indexed axis' length (an index must lie in `-len..len`).
    pub len: usize,
}

/// What a step launches.
#[derive(Clone, Debug, PartialEq)]
pub enum Kernel {
    /// `rlx_unary_*` over every element.
    Unary(UnaryOp),
    /// `rlx_binary_*` with the broadcast layout over the output dims.
    Binary {
        /// The op.
        op: BinaryOp,
        /// Output dims.
        dims: Vec<usize>,
        /// Operand a's strides over them.
        a_strides: Vec<i64>,
        /// Operand b's strides.
        b_strides: Vec<i64>,
    },
    /// `rlx_reduce_*` of the input viewed as `[outer, n, inner]` over `n`.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// `[outer, n, inner]`.
        shape: [usize; 3],
    },
    /// `rlx_softmax_*` over the last axis of `[rows, n]`.
    Softmax {
        /// `[rows, n]`.
        shape: [usize; 2],
        /// Log-softmax.
        log: bool,
    },
    /// `rlx_layer_norm_*` over `[rows, n]`; inputs `x [, gamma [, beta]]`.
    LayerNorm {
        /// `[rows, n]`.
        shape: [usize; 2],
        /// Epsilon.
        eps: f32,
    },
    /// `rlx_rms_norm_*` over `[rows, n]`; inputs `x [, gamma]`.
    RmsNorm {
        /// `[rows, n]`.
        shape: [usize; 2],
        /// Epsilon.
        eps: f32,
    },
    /// `rlx_gather_*`: rows of a `[rows, row_len]` table by i64 indices.
    Gather {
        /// Table rows.
        rows: usize,
        /// Elements per row.
        row_len: usize,
    },
    /// `rlx_strided_copy_b<width>`: piece `i` reads input `i` (one piece
    /// for a transpose / broadcast / slice / reshape, one per operand for a
    /// concat).
    Copy {
        /// Element width in bytes (1, 2, 4 or 8).
        width: usize,
        /// The copies.
        pieces: Vec<CopyPiece>,
    },
    /// `rlx_cast_<from>_<to>`.
    Cast {
        /// Source type suffix.
        from: &'static str,
        /// Destination type suffix.
        to: &'static str,
    },
    /// `rlx_compare_<suffix>`: a broadcasting comparison to Bool.
    Compare {
        /// Op code (0 eq, 1 ne, 2 lt, 3 le, 4 gt, 5 ge).
        code: i32,
        /// Operand type suffix (`f32`, `f16`, `bf16`, `i32`, `i64`).
        suffix: &'static str,
        /// Output dims.
        dims: Vec<usize>,
        /// Operand a's strides over them.
        a_strides: Vec<i64>,
        /// Operand b's strides.
        b_strides: Vec<i64>,
    },
    /// `rlx_select_b<width>`: `where(c, a, b)`, broadcasting.
    Select {
        /// Element width in bytes.
        width: usize,
        /// Output dims.
        dims: Vec<usize>,
        /// The condition's strides over them.
        c_strides: Vec<i64>,
        /// a's strides.
        a_strides: Vec<i64>,
        /// b's strides.
        b_strides: Vec<i64>,
    },
    /// `rlx_iota_*`: `start + step * index` along one axis of the output.
    Iota {
        /// Elements after the axis (product of the later dims).
        inner: usize,
        /// The axis length.
        len: usize,
        /// First value.
        start: f64,
        /// Increment.
        step: f64,
    },
    /// A cuBLAS strided-batched GEMM (f32 accumulation).
    Gemm(GemmSpec),
    /// A GEMM whose result gets a per-column bias and an activation
    /// (inputs `a, b, bias[n]`): cuBLASLt's fused epilogue where it has an
    /// algorithm, else the GEMM then the elementwise kernels in place.
    GemmBias {
        /// The product.
        gemm: GemmSpec,
        /// What follows it.
        epilogue: Epilogue,
    },
    /// `rlx_argreduce_*`: the i64 index of each line's first extremum, the
    /// input viewed as `[outer, n, inner]` over `n`.
    ArgReduce {
        /// argmin (else argmax).
        argmin: bool,
        /// `[outer, n, inner]`.
        shape: [usize; 3],
    },
    /// `rlx_cumsum_*` along `n` of `[outer, n, inner]`.
    Cumsum {
        /// `[outer, n, inner]`.
        shape: [usize; 3],
        /// Exclude each element itself.
        exclusive: bool,
        /// Accumulate from the end.
        reverse: bool,
    },
    /// `rlx_pad_b<width>`.
    Pad {
        /// Element width in bytes (1, 2, 4 or 8).
        width: usize,
        /// Dims and front pads.
        layout: PadLayout,
        /// 0 constant, 1 reflect, 2 edge.
        mode: i32,
        /// The constant's element bytes (little-endian, zero-extended).
        fill: u64,
    },
    /// `rlx_conv2d_*`: inputs `x, w [, bias]`.
    Conv2d(Window2d),
    /// `rlx_conv_transpose2d_*`: inputs `x, w [, bias]` (`w [in_c,
    /// out_c / groups, kh, kw]`); the window's `h` / `w` are the input's.
    ConvTranspose2d(Window2d),
    /// `rlx_gather_elements_*`: numpy `take_along_axis`; inputs `x, i64 indices`.
    GatherElements(AxisIndex),
    /// A copy of the base into the output, then `rlx_scatter_add_*`;
    /// inputs `base, i64 indices, updates`.
    ScatterAdd(AxisIndex),
    /// `rlx_topk_*` along `n` of `[outer, n, inner]`.
    TopK {
        /// `[outer, n, inner]`.
        shape: [usize; 3],
        /// How many.
        k: usize,
        /// Largest (else smallest).
        largest: bool,
        /// The output is the i64 indices (else the values).
        indices: bool,
    },
    /// `rlx_resize_*`: nearest / linear resize of the spatial dims.
    Resize(Resize),
    /// `rlx_dequant_<format>`: GGUF block bytes to f32.
    Dequantize {
        /// The block format's entry suffix (`q4_0`, `q4_1`, `q5_0`, `q5_1`,
        /// `q8_0`, `q4_k`, `q5_k`, `q6_k`).
        format: &'static str,
    },
    /// `rlx_pool2d_*`.
    Pool2d {
        /// The window (`out_c` = `in_c`).
        window: Window2d,
        /// Average (else max).
        avg: bool,
        /// An average counts padded cells.
        count_include_pad: bool,
    },
}

/// One launch: its kernel, the values it reads and the one it writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The node it computes.
    pub node: NodeId,
    /// How errors and dumps name it (`%7 matmul`).
    pub label: String,
    /// What it launches.
    pub kernel: Kernel,
    /// Operands, in the node's input order.
    pub inputs: Vec<Buf>,
    /// The result.
    pub output: Buf,
}

/// A graph compiled to launches: what [`crate::executor::CudaExecutable`]
/// runs.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchPlan {
    /// The graph's name.
    pub name: String,
    /// Arena bytes.
    pub arena_bytes: usize,
    /// The launches, in schedule order.
    pub steps: Vec<Step>,
    /// Manifest inputs: name and arena place, in manifest order.
    pub inputs: Vec<(String, Buf)>,
    /// Manifest params: name and buffer, in manifest order.
    pub params: Vec<(String, Buf)>,
    /// Manifest outputs, in manifest order.
    pub outputs: Vec<Buf>,
    /// Constant bytes, uploaded once at compile time (`Region::Const(i)`):
    /// the graph's shared bytes, not a copy.
    pub constants: Vec<rlx_ir::ConstBytes>,
    /// Concats the memory plan joined in place (no launch): each concat's
    /// place and its parts' places, which the parts' launches write.
    pub joined: Vec<(Buf, Vec<Buf>)>,
}

/// The entry-point suffix of an iota output type.
pub(crate) fn iota_suffix(dt: DType) -> Option<&'static str> {
    match dt {
        DType::I32 => Some("i32"),
        DType::I64 => Some("i64"),
        _ => float_suffix(dt),
    }
}

/// The entry-point suffix of a float dtype with kernels.
pub(crate) fn float_suffix(dt: DType) -> Option<&'static str> {
    match dt {
        DType::F32 => Some("f32"),
        DType::F16 => Some("f16"),
        DType::BF16 => Some("bf16"),
        _ => None,
    }
}
