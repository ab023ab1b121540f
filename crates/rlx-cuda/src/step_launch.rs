//! A plan [`Step`] as the launches that compute it: each kernel's entry
//! point, its argument values in parameter order and its geometry, or a
//! planned cuBLAS GEMM. Pure data, built without a device: the executor
//! launches these on a GPU, and the host harness of `tests/` runs the same
//! launches (same entry points, same argument bytes) through the real `.cu`
//! sources compiled for the CPU.

use crate::geometry::{PadLayout, Resize, Window2d};
use crate::gpu::GpuError;
use crate::kernels::{BinaryOp, UnaryOp};
use crate::launch::{grid_stride, per_row, Layout};
use crate::plan::{float_suffix, iota_suffix, AxisIndex, Buf, Epilogue, GemmSpec, Kernel, Step};
use rlx_ir::DType;

/// One kernel argument by value, laid out as the C parameter it fills.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelArg {
    /// A device address (a pointer parameter; 0 is null).
    Ptr(u64),
    /// `long long`.
    I64(i64),
    /// `int`.
    I32(i32),
    /// `unsigned long long` (a pad's fill bits).
    U64(u64),
    /// `float`.
    F32(f32),
    /// `double`.
    F64(f64),
    /// `struct Layout`.
    Layout(Layout),
    /// `struct Window2d`.
    Window(Window2d),
    /// `struct PadLayout`.
    Pad(PadLayout),
    /// `struct Resize`.
    Resize(Resize),
}

impl KernelArg {
    /// The address of the value (what `cuLaunchKernel`'s `kernelParams` holds).
    pub fn value_ptr(&self) -> *const u8 {
        match self {
            KernelArg::Ptr(v) | KernelArg::U64(v) => v as *const u64 as *const u8,
            KernelArg::I64(v) => v as *const i64 as *const u8,
            KernelArg::I32(v) => v as *const i32 as *const u8,
            KernelArg::F32(v) => v as *const f32 as *const u8,
            KernelArg::F64(v) => v as *const f64 as *const u8,
            KernelArg::Layout(v) => v as *const Layout as *const u8,
            KernelArg::Window(v) => v as *const Window2d as *const u8,
            KernelArg::Pad(v) => v as *const PadLayout as *const u8,
            KernelArg::Resize(v) => v as *const Resize as *const u8,
        }
    }

    /// The value's size in bytes (the C parameter's `sizeof`).
    pub fn size(&self) -> usize {
        use std::mem::size_of;
        match self {
            KernelArg::Ptr(_) | KernelArg::U64(_) | KernelArg::I64(_) | KernelArg::F64(_) => 8,
            KernelArg::I32(_) | KernelArg::F32(_) => 4,
            KernelArg::Layout(_) => size_of::<Layout>(),
            KernelArg::Window(_) => size_of::<Window2d>(),
            KernelArg::Pad(_) => size_of::<PadLayout>(),
            KernelArg::Resize(_) => size_of::<Resize>(),
        }
    }
}

/// One kernel launch: module, entry point, arguments and geometry.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelLaunch {
    /// The kernel module (a [`crate::kernels::SOURCES`] name).
    pub module: &'static str,
    /// The `extern "C"` entry point.
    pub entry: String,
    /// The arguments in parameter order.
    pub args: Vec<KernelArg>,
    /// Blocks per grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
}

/// What a step launches, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum StepLaunch {
    /// A kernel.
    Kernel(KernelLaunch),
    /// A planned GEMM over the places `[a, b, c]` (cuBLAS on the device).
    Gemm {
        /// The GEMM.
        spec: GemmSpec,
        /// Its element type.
        dtype: DType,
        /// Addresses of a, b and c.
        places: [u64; 3],
    },
    /// A GEMM with a per-column bias epilogue over `[a, b, bias, c]`: one
    /// cuBLASLt call where it has an algorithm, else the plain GEMM then
    /// `fallback` (the bias add and the activation, in place over c).
    GemmBias {
        /// The GEMM.
        spec: GemmSpec,
        /// Its element type.
        dtype: DType,
        /// The epilogue.
        epilogue: Epilogue,
        /// Addresses of a, b, the bias and c.
        places: [u64; 4],
        /// The kernels after a plain GEMM when the fused one is unavailable.
        fallback: Vec<KernelLaunch>,
    },
}

fn kernel(
    module: &'static str,
    entry: String,
    args: Vec<KernelArg>,
    cfg: cudarc::driver::LaunchConfig,
) -> KernelLaunch {
    KernelLaunch {
        module,
        entry,
        args,
        grid: cfg.grid_dim,
        block: cfg.block_dim,
    }
}

/// The launches computing `step`; `addr` gives a place's device address,
/// `flag` the address of the step's bad-index flag (index-checking steps).
pub fn step_launches(
    step: &Step,
    addr: &dyn Fn(&Buf) -> u64,
    flag: u64,
) -> Result<Vec<StepLaunch>, GpuError> {
    use KernelArg::{Ptr, F32, F64, I32, I64};
    let out = &step.output;
    let y = addr(out);
    let x: Vec<u64> = step.inputs.iter().map(addr).collect();
    let sfx = |b: &Buf| {
        float_suffix(b.dtype)
            .ok_or_else(|| GpuError::BadInput(format!("no kernel computes {}", b.dtype)))
    };
    let n = out.numel() as i64;
    let one =
        |module, entry, args, cfg| Ok(vec![StepLaunch::Kernel(kernel(module, entry, args, cfg))]);
    match &step.kernel {
        Kernel::Unary(op) => Ok(vec![StepLaunch::Kernel(unary(sfx(out)?, *op, x[0], y, n))]),
        Kernel::Binary {
            op,
            dims,
            a_strides,
            b_strides,
        } => {
            let layout = Layout::new(dims, a_strides, b_strides)?;
            Ok(vec![StepLaunch::Kernel(binary(
                sfx(out)?,
                *op,
                [x[0], x[1], y],
                n,
                layout,
            ))])
        }
        Kernel::Reduce { op, shape } => {
            let [o, len, i] = shape.map(|d| d as i64);
            let args = vec![Ptr(x[0]), Ptr(y), I64(o), I64(len), I64(i), I32(*op as i32)];
            let cfg = per_row(shape[0] * shape[2])?;
            one("reduce", format!("rlx_reduce_{}", sfx(out)?), args, cfg)
        }
        Kernel::Softmax { shape, log } => {
            let [rows, len] = shape.map(|d| d as i64);
            let args = vec![Ptr(x[0]), Ptr(y), I64(rows), I64(len), I32(*log as i32)];
            one(
                "softmax",
                format!("rlx_softmax_{}", sfx(out)?),
                args,
                per_row(shape[0])?,
            )
        }
        Kernel::LayerNorm { shape, eps } => {
            let [rows, len] = shape.map(|d| d as i64);
            // A null scale / shift: the kernel skips it.
            let (gamma, beta) = (
                x.get(1).copied().unwrap_or(0),
                x.get(2).copied().unwrap_or(0),
            );
            let args = vec![
                Ptr(x[0]),
                Ptr(gamma),
                Ptr(beta),
                Ptr(y),
                I64(rows),
                I64(len),
                F32(*eps),
            ];
            let entry = format!("rlx_layer_norm_{}", sfx(out)?);
            one("norm", entry, args, per_row(shape[0])?)
        }
        Kernel::RmsNorm { shape, eps } => {
            let [rows, len] = shape.map(|d| d as i64);
            let gamma = x.get(1).copied().unwrap_or(0);
            let args = vec![
                Ptr(x[0]),
                Ptr(gamma),
                Ptr(y),
                I64(rows),
                I64(len),
                F32(*eps),
            ];
            let entry = format!("rlx_rms_norm_{}", sfx(out)?);
            one("norm", entry, args, per_row(shape[0])?)
        }
        Kernel::Gather { rows, row_len } => {
            let count = step.inputs[1].numel() as i64;
            let args = vec![
                Ptr(x[0]),
                Ptr(x[1]),
                Ptr(y),
                I64(count),
                I64(*row_len as i64),
                I64(*rows as i64),
                Ptr(flag),
            ];
            let entry = format!("rlx_gather_{}", sfx(out)?);
            one("gather", entry, args, grid_stride(n as usize))
        }
        Kernel::Copy { width, pieces } => {
            let mut v = Vec::new();
            for (p, src) in pieces.iter().zip(&x) {
                let count = p.dims.iter().product::<usize>();
                if count == 0 {
                    continue;
                }
                let layout = Layout::new(&p.dims, &p.x_strides, &p.y_strides)?;
                v.push(copy(
                    *width,
                    *src,
                    y,
                    count,
                    [p.x_offset, p.y_offset],
                    layout,
                ));
            }
            Ok(v.into_iter().map(StepLaunch::Kernel).collect())
        }
        Kernel::Cast { from, to } => {
            let args = vec![Ptr(x[0]), Ptr(y), I64(n)];
            one(
                "cast",
                format!("rlx_cast_{from}_{to}"),
                args,
                grid_stride(n as usize),
            )
        }
        Kernel::Compare {
            code,
            suffix,
            dims,
            a_strides,
            b_strides,
        } => {
            let layout = Layout::new(dims, a_strides, b_strides)?;
            let args = vec![
                Ptr(x[0]),
                Ptr(x[1]),
                Ptr(y),
                I64(n),
                I32(*code),
                KernelArg::Layout(layout),
            ];
            let entry = format!("rlx_compare_{suffix}");
            one("select", entry, args, grid_stride(n as usize))
        }
        Kernel::Select {
            width,
            dims,
            c_strides,
            a_strides,
            b_strides,
        } => {
            let ca = Layout::new(dims, c_strides, a_strides)?;
            let bl = Layout::new(dims, b_strides, b_strides)?;
            let args = vec![
                Ptr(x[0]),
                Ptr(x[1]),
                Ptr(x[2]),
                Ptr(y),
                I64(n),
                KernelArg::Layout(ca),
                KernelArg::Layout(bl),
            ];
            let entry = format!("rlx_select_b{width}");
            one("select", entry, args, grid_stride(n as usize))
        }
        Kernel::Iota {
            inner,
            len,
            start,
            step,
        } => {
            let s = iota_suffix(out.dtype)
                .ok_or_else(|| GpuError::BadInput(format!("no iota of {}", out.dtype)))?;
            let args = vec![
                Ptr(y),
                I64(n),
                I64(*inner as i64),
                I64(*len as i64),
                F64(*start),
                F64(*step),
            ];
            one(
                "iota",
                format!("rlx_iota_{s}"),
                args,
                grid_stride(n as usize),
            )
        }
        Kernel::Gemm(spec) => Ok(vec![StepLaunch::Gemm {
            spec: *spec,
            dtype: out.dtype,
            places: [x[0], x[1], y],
        }]),
        Kernel::GemmBias {
            gemm: spec,
            epilogue,
        } => {
            let s = sfx(out)?;
            let rows = n as usize / spec.n;
            let layout = Layout::new(&[rows, spec.n], &[spec.n as i64, 1], &[0, 1])?;
            let mut fallback = vec![binary(s, BinaryOp::Add, [y, x[2], y], n, layout)];
            let act = match epilogue {
                Epilogue::Bias => None,
                Epilogue::BiasRelu => Some(UnaryOp::Relu),
                Epilogue::BiasGeluTanh => Some(UnaryOp::GeluTanh),
            };
            fallback.extend(act.map(|op| unary(s, op, y, y, n)));
            Ok(vec![StepLaunch::GemmBias {
                spec: *spec,
                dtype: out.dtype,
                epilogue: *epilogue,
                places: [x[0], x[1], x[2], y],
                fallback,
            }])
        }
        Kernel::ArgReduce { argmin, shape } => {
            let [o, len, i] = shape.map(|d| d as i64);
            let args = vec![
                Ptr(x[0]),
                Ptr(y),
                I64(o),
                I64(len),
                I64(i),
                I32(*argmin as i32),
            ];
            let entry = format!("rlx_argreduce_{}", sfx(&step.inputs[0])?);
            one("scan", entry, args, grid_stride(shape[0] * shape[2]))
        }
        Kernel::Cumsum {
            shape,
            exclusive,
            reverse,
        } => {
            let [o, len, i] = shape.map(|d| d as i64);
            let args = vec![
                Ptr(x[0]),
                Ptr(y),
                I64(o),
                I64(len),
                I64(i),
                I32(*exclusive as i32),
                I32(*reverse as i32),
            ];
            let entry = format!("rlx_cumsum_{}", sfx(out)?);
            one("scan", entry, args, grid_stride(shape[0] * shape[2]))
        }
        Kernel::Pad {
            width,
            layout,
            mode,
            fill,
        } => {
            let args = vec![
                Ptr(x[0]),
                Ptr(y),
                I64(n),
                KernelArg::Pad(*layout),
                I32(*mode),
                KernelArg::U64(*fill),
            ];
            one(
                "pad",
                format!("rlx_pad_b{width}"),
                args,
                grid_stride(n as usize),
            )
        }
        Kernel::Conv2d(w) | Kernel::ConvTranspose2d(w) => {
            let name = if matches!(step.kernel, Kernel::Conv2d(_)) {
                "rlx_conv2d"
            } else {
                "rlx_conv_transpose2d"
            };
            // A null bias: the kernel skips it.
            let bias = x.get(2).copied().unwrap_or(0);
            let args = vec![
                Ptr(x[0]),
                Ptr(x[1]),
                Ptr(bias),
                Ptr(y),
                KernelArg::Window(*w),
            ];
            let entry = format!("{name}_{}", sfx(out)?);
            one("window", entry, args, grid_stride(n as usize))
        }
        Kernel::Pool2d {
            window,
            avg,
            count_include_pad,
        } => {
            let args = vec![
                Ptr(x[0]),
                Ptr(y),
                KernelArg::Window(*window),
                I32(*avg as i32),
                I32(*count_include_pad as i32),
            ];
            let entry = format!("rlx_pool2d_{}", sfx(out)?);
            one("window", entry, args, grid_stride(n as usize))
        }
        Kernel::GatherElements(a) => {
            let (layout, count) = index_args(a)?;
            let args = vec![
                Ptr(x[0]),
                Ptr(x[1]),
                Ptr(y),
                I64(count),
                KernelArg::Layout(layout),
                I64(a.axis_stride),
                I64(a.len as i64),
                Ptr(flag),
            ];
            let entry = format!("rlx_gather_elements_{}", sfx(out)?);
            one("indexing", entry, args, grid_stride(count as usize))
        }
        Kernel::ScatterAdd(a) => {
            let mut v = Vec::new();
            // The base first (a no-op when the output reuses its bytes).
            if x[0] != y {
                let whole = Layout::new(&[out.numel()], &[1], &[1])?;
                v.push(copy(
                    out.dtype.size_bytes(),
                    x[0],
                    y,
                    out.numel(),
                    [0, 0],
                    whole,
                ));
            }
            let (layout, count) = index_args(a)?;
            let args = vec![
                Ptr(x[1]),
                Ptr(x[2]),
                Ptr(y),
                I64(count),
                KernelArg::Layout(layout),
                I64(a.axis_stride),
                I64(a.len as i64),
                Ptr(flag),
            ];
            let entry = format!("rlx_scatter_add_{}", sfx(out)?);
            v.push(kernel("indexing", entry, args, grid_stride(count as usize)));
            Ok(v.into_iter().map(StepLaunch::Kernel).collect())
        }
        Kernel::TopK {
            shape,
            k,
            largest,
            indices,
        } => {
            // The unwanted output is a null pointer.
            let (vals, inds) = if *indices { (0u64, y) } else { (y, 0u64) };
            let [o, len, i] = shape.map(|d| d as i64);
            let args = vec![
                Ptr(x[0]),
                Ptr(vals),
                Ptr(inds),
                I64(o),
                I64(len),
                I64(i),
                I64(*k as i64),
                I32(*largest as i32),
            ];
            let entry = format!("rlx_topk_{}", sfx(&step.inputs[0])?);
            one("indexing", entry, args, grid_stride(shape[0] * shape[2]))
        }
        Kernel::Resize(r) => {
            let args = vec![Ptr(x[0]), Ptr(y), I64(n), KernelArg::Resize(*r)];
            let entry = format!("rlx_resize_{}", sfx(out)?);
            one("resample", entry, args, grid_stride(n as usize))
        }
        Kernel::Dequantize { format } => {
            let args = vec![Ptr(x[0]), Ptr(y), I64(n)];
            let entry = format!("rlx_dequant_{format}");
            one("dequant", entry, args, grid_stride(n as usize))
        }
    }
}

/// `rlx_unary_<sfx>` from `x` to `y` over n elements.
fn unary(sfx: &str, op: UnaryOp, x: u64, y: u64, n: i64) -> KernelLaunch {
    use KernelArg::{Ptr, I32, I64};
    let args = vec![Ptr(x), Ptr(y), I64(n), I32(op as i32)];
    kernel(
        "elementwise",
        format!("rlx_unary_{sfx}"),
        args,
        grid_stride(n as usize),
    )
}

/// `rlx_binary_<sfx>` of `a`, `b` into `y` over `layout`.
fn binary(sfx: &str, op: BinaryOp, [a, b, y]: [u64; 3], n: i64, layout: Layout) -> KernelLaunch {
    use KernelArg::{Ptr, I32, I64};
    let args = vec![
        Ptr(a),
        Ptr(b),
        Ptr(y),
        I64(n),
        I32(op as i32),
        KernelArg::Layout(layout),
    ];
    kernel(
        "elementwise",
        format!("rlx_binary_{sfx}"),
        args,
        grid_stride(n as usize),
    )
}

/// `rlx_strided_copy_b<width>` of `count` elements from `x` to `y`.
fn copy(width: usize, x: u64, y: u64, count: usize, [xo, yo]: [i64; 2], l: Layout) -> KernelLaunch {
    use KernelArg::{Ptr, I64};
    let args = vec![
        Ptr(x),
        Ptr(y),
        I64(count as i64),
        I64(xo),
        I64(yo),
        KernelArg::Layout(l),
    ];
    kernel(
        "movement",
        format!("rlx_strided_copy_b{width}"),
        args,
        grid_stride(count),
    )
}

/// The layout and element count of an index step.
fn index_args(a: &AxisIndex) -> Result<(Layout, i64), GpuError> {
    let layout = Layout::new(&a.dims, &a.data_strides, &a.data_strides)?;
    Ok((layout, a.dims.iter().product::<usize>() as i64))
}
