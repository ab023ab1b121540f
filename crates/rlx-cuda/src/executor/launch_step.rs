//! One [`Step`] of a launch plan on the device: its kernel's arguments
//! from the step's places (raw device addresses: base of the buffer plus
//! the planned byte offset) and its launch geometry.

use super::launch_indexing::launch_indexing;
use crate::gemm::CudaGemm;
use crate::gpu::{CudaGpu, GpuError};
use crate::kernels::{BinaryOp, UnaryOp};
use crate::launch::{grid_stride, per_row, Layout};
use crate::plan::{float_suffix, iota_suffix, Buf, Epilogue, Kernel, Step};
use cudarc::driver::PushKernelArg;

/// Launches `step` on `gpu`'s stream; `addr` gives a place's device
/// address, `flag` the address of this step's bad-index flag (gathers).
pub(crate) fn launch_step(
    gpu: &CudaGpu,
    gemm: &CudaGemm,
    step: &Step,
    addr: &dyn Fn(&Buf) -> u64,
    flag: u64,
) -> Result<(), GpuError> {
    let out = &step.output;
    let y = addr(out);
    let x: Vec<u64> = step.inputs.iter().map(addr).collect();
    let sfx = || {
        float_suffix(out.dtype)
            .ok_or_else(|| GpuError::BadInput(format!("no kernel computes {}", out.dtype)))
    };
    let n = out.numel() as i64;
    match &step.kernel {
        // SAFETY: both places hold n elements.
        Kernel::Unary(op) => unsafe { unary(gpu, sfx()?, *op, x[0], y, n) }?,
        Kernel::Binary {
            op,
            dims,
            a_strides,
            b_strides,
        } => {
            let layout = Layout::new(dims, a_strides, b_strides)?;
            // SAFETY: the broadcast strides stay inside each operand.
            unsafe { binary(gpu, sfx()?, *op, [x[0], x[1], y], n, &layout) }?;
        }
        Kernel::Reduce { op, shape } => {
            let f = gpu.function("reduce", &format!("rlx_reduce_{}", sfx()?))?;
            let [o, len, i] = shape.map(|d| d as i64);
            let code = *op as i32;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(&o).arg(&len).arg(&i).arg(&code);
            // SAFETY: `rlx_reduce_*`; one block per output element.
            unsafe { l.launch(per_row(shape[0] * shape[2])?) }?;
        }
        Kernel::Softmax { shape, log } => {
            let f = gpu.function("softmax", &format!("rlx_softmax_{}", sfx()?))?;
            let [rows, len] = shape.map(|d| d as i64);
            let lg = *log as i32;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(&rows).arg(&len).arg(&lg);
            // SAFETY: `rlx_softmax_*`; one block per row.
            unsafe { l.launch(per_row(shape[0])?) }?;
        }
        Kernel::LayerNorm { shape, eps } => {
            let f = gpu.function("norm", &format!("rlx_layer_norm_{}", sfx()?))?;
            let [rows, len] = shape.map(|d| d as i64);
            // A null scale / shift: the kernel skips it.
            let (gamma, beta) = (
                x.get(1).copied().unwrap_or(0),
                x.get(2).copied().unwrap_or(0),
            );
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&gamma)
                .arg(&beta)
                .arg(&y)
                .arg(&rows)
                .arg(&len)
                .arg(eps);
            // SAFETY: `rlx_layer_norm_*`; scale / shift hold one row (planned).
            unsafe { l.launch(per_row(shape[0])?) }?;
        }
        Kernel::RmsNorm { shape, eps } => {
            let f = gpu.function("norm", &format!("rlx_rms_norm_{}", sfx()?))?;
            let [rows, len] = shape.map(|d| d as i64);
            let gamma = x.get(1).copied().unwrap_or(0);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&gamma)
                .arg(&y)
                .arg(&rows)
                .arg(&len)
                .arg(eps);
            // SAFETY: `rlx_rms_norm_*`.
            unsafe { l.launch(per_row(shape[0])?) }?;
        }
        Kernel::Gather { rows, row_len } => {
            let f = gpu.function("gather", &format!("rlx_gather_{}", sfx()?))?;
            let count = step.inputs[1].numel() as i64;
            let (rl, r) = (*row_len as i64, *rows as i64);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&x[1])
                .arg(&y)
                .arg(&count)
                .arg(&rl)
                .arg(&r)
                .arg(&flag);
            // SAFETY: `rlx_gather_*`; rows are bounds-checked in the kernel.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::Copy { width, pieces } => {
            let f = gpu.function("movement", &format!("rlx_strided_copy_b{width}"))?;
            for (p, src) in pieces.iter().zip(&x) {
                let layout = Layout::new(&p.dims, &p.x_strides, &p.y_strides)?;
                let count = p.dims.iter().product::<usize>();
                if count == 0 {
                    continue;
                }
                let c = count as i64;
                let mut l = gpu.stream().launch_builder(&f);
                l.arg(src)
                    .arg(&y)
                    .arg(&c)
                    .arg(&p.x_offset)
                    .arg(&p.y_offset)
                    .arg(&layout);
                // SAFETY: `rlx_strided_copy_b*` for this element width; the
                // planned strides and offsets stay inside source and output.
                unsafe { l.launch(grid_stride(count)) }?;
            }
        }
        Kernel::Cast { from, to } => {
            let f = gpu.function("cast", &format!("rlx_cast_{from}_{to}"))?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(&n);
            // SAFETY: the plan names the element types of both places.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::Compare {
            code,
            suffix,
            dims,
            a_strides,
            b_strides,
        } => {
            let f = gpu.function("select", &format!("rlx_compare_{suffix}"))?;
            let layout = Layout::new(dims, a_strides, b_strides)?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&x[1])
                .arg(&y)
                .arg(&n)
                .arg(code)
                .arg(&layout);
            // SAFETY: `rlx_compare_*`; the broadcast strides stay inside each operand.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::Select {
            width,
            dims,
            c_strides,
            a_strides,
            b_strides,
        } => {
            let f = gpu.function("select", &format!("rlx_select_b{width}"))?;
            let ca = Layout::new(dims, c_strides, a_strides)?;
            let bl = Layout::new(dims, b_strides, b_strides)?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&x[1])
                .arg(&x[2])
                .arg(&y)
                .arg(&n)
                .arg(&ca)
                .arg(&bl);
            // SAFETY: `rlx_select_b*` for this element width; strides planned per operand.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::Iota {
            inner,
            len,
            start,
            step,
        } => {
            let sfx = iota_suffix(out.dtype)
                .ok_or_else(|| GpuError::BadInput(format!("no iota of {}", out.dtype)))?;
            let f = gpu.function("iota", &format!("rlx_iota_{sfx}"))?;
            let (inner, len) = (*inner as i64, *len as i64);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&y).arg(&n).arg(&inner).arg(&len).arg(start).arg(step);
            // SAFETY: `rlx_iota_*(T*, i64, i64, i64, double, double)`; y holds n elements.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::Gemm(spec) => {
            // SAFETY: the plan sized every place for this GEMM.
            unsafe { gemm.planned(spec, out.dtype, [x[0], x[1], y]) }?;
        }
        Kernel::GemmBias {
            gemm: spec,
            epilogue,
        } => {
            // SAFETY: the plan sized every place for this GEMM, the bias
            // one value per column, and c overlapping no operand.
            let fused = unsafe {
                gemm.planned_bias(gpu, spec, out.dtype, *epilogue, [x[0], x[1], x[2], y])
            }?;
            if !fused {
                let sfx = sfx()?;
                // SAFETY: as above; then the bias broadcast over the rows,
                // and the activation, in place over c's n elements.
                unsafe { gemm.planned(spec, out.dtype, [x[0], x[1], y]) }?;
                let rows = n as usize / spec.n;
                let layout = Layout::new(&[rows, spec.n], &[spec.n as i64, 1], &[0, 1])?;
                unsafe { binary(gpu, sfx, BinaryOp::Add, [y, x[2], y], n, &layout) }?;
                let act = match epilogue {
                    Epilogue::Bias => None,
                    Epilogue::BiasRelu => Some(UnaryOp::Relu),
                    Epilogue::BiasGeluTanh => Some(UnaryOp::GeluTanh),
                };
                if let Some(op) = act {
                    // SAFETY: in place over c's n elements.
                    unsafe { unary(gpu, sfx, op, y, y, n) }?;
                }
            }
        }
        Kernel::ArgReduce { argmin, shape } => {
            let from = float_suffix(step.inputs[0].dtype).ok_or_else(|| {
                GpuError::BadInput(format!("no argmax of {}", step.inputs[0].dtype))
            })?;
            let f = gpu.function("scan", &format!("rlx_argreduce_{from}"))?;
            let [o, len, i] = shape.map(|d| d as i64);
            let code = *argmin as i32;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(&o).arg(&len).arg(&i).arg(&code);
            // SAFETY: `rlx_argreduce_*(const T*, i64*, i64, i64, i64, int)`;
            // x holds outer * n * inner elements, y outer * inner.
            unsafe { l.launch(grid_stride(shape[0] * shape[2])) }?;
        }
        Kernel::Cumsum {
            shape,
            exclusive,
            reverse,
        } => {
            let f = gpu.function("scan", &format!("rlx_cumsum_{}", sfx()?))?;
            let [o, len, i] = shape.map(|d| d as i64);
            let (ex, rev) = (*exclusive as i32, *reverse as i32);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&y)
                .arg(&o)
                .arg(&len)
                .arg(&i)
                .arg(&ex)
                .arg(&rev);
            // SAFETY: `rlx_cumsum_*`; x and y hold outer * n * inner elements.
            unsafe { l.launch(grid_stride(shape[0] * shape[2])) }?;
        }
        Kernel::Pad {
            width,
            layout,
            mode,
            fill,
        } => {
            let f = gpu.function("pad", &format!("rlx_pad_b{width}"))?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(&n).arg(layout).arg(mode).arg(fill);
            // SAFETY: `rlx_pad_b*` for this element width; every source
            // index lies inside the planned input dims.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::Conv2d(window) => {
            let f = gpu.function("window", &format!("rlx_conv2d_{}", sfx()?))?;
            // A null bias: the kernel skips it.
            let bias = x.get(2).copied().unwrap_or(0);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&x[1]).arg(&bias).arg(&y).arg(window);
            // SAFETY: `rlx_conv2d_*`; taps outside x are skipped, the
            // weight holds out_c * in_c / groups * kh * kw elements (planned).
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::ConvTranspose2d(_)
        | Kernel::GatherElements(_)
        | Kernel::ScatterAdd(_)
        | Kernel::TopK { .. }
        | Kernel::Resize(_)
        | Kernel::Dequantize { .. } => launch_indexing(gpu, step, &x, y, flag)?,
        Kernel::Pool2d {
            window,
            avg,
            count_include_pad,
        } => {
            let f = gpu.function("window", &format!("rlx_pool2d_{}", sfx()?))?;
            let (a, c) = (*avg as i32, *count_include_pad as i32);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(window).arg(&a).arg(&c);
            // SAFETY: `rlx_pool2d_*`; taps outside x are skipped.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
    }
    Ok(())
}

/// `rlx_unary_<sfx>` from `x` to `y`.
///
/// # Safety
/// `x` and `y` must address n elements of the suffix's type.
unsafe fn unary(
    gpu: &CudaGpu,
    sfx: &str,
    op: UnaryOp,
    x: u64,
    y: u64,
    n: i64,
) -> Result<(), GpuError> {
    let f = gpu.function("elementwise", &format!("rlx_unary_{sfx}"))?;
    let code = op as i32;
    let mut l = gpu.stream().launch_builder(&f);
    l.arg(&x).arg(&y).arg(&n).arg(&code);
    // SAFETY: `rlx_unary_*(const T*, T*, i64, int)`; the caller's promise.
    unsafe { l.launch(grid_stride(n as usize)) }?;
    Ok(())
}

/// `rlx_binary_<sfx>` of `a`, `b` into `y` over `layout`.
///
/// # Safety
/// `y` must address n elements, and `layout`'s strides stay inside `a` and `b`.
unsafe fn binary(
    gpu: &CudaGpu,
    sfx: &str,
    op: BinaryOp,
    [a, b, y]: [u64; 3],
    n: i64,
    layout: &Layout,
) -> Result<(), GpuError> {
    let f = gpu.function("elementwise", &format!("rlx_binary_{sfx}"))?;
    let code = op as i32;
    let mut l = gpu.stream().launch_builder(&f);
    l.arg(&a).arg(&b).arg(&y).arg(&n).arg(&code).arg(layout);
    // SAFETY: `rlx_binary_*`; the caller's promise.
    unsafe { l.launch(grid_stride(n as usize)) }?;
    Ok(())
}
