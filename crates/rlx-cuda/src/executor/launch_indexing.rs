//! Launches of the indexing, top-k, transposed-convolution, resize and
//! dequantize steps (the rest of [`super::launch_step`]).

use crate::gpu::{CudaGpu, GpuError};
use crate::launch::{grid_stride, Layout};
use crate::plan::{float_suffix, AxisIndex, Kernel, Step};
use cudarc::driver::PushKernelArg;

/// Launches `step` (one of the kernels above); `x` are its operands' and
/// `y` its output's device addresses, `flag` its bad-index flag.
pub(crate) fn launch_indexing(
    gpu: &CudaGpu,
    step: &Step,
    x: &[u64],
    y: u64,
    flag: u64,
) -> Result<(), GpuError> {
    let out = &step.output;
    let n = out.numel() as i64;
    let sfx = |b: &crate::plan::Buf| {
        float_suffix(b.dtype)
            .ok_or_else(|| GpuError::BadInput(format!("no kernel computes {}", b.dtype)))
    };
    match &step.kernel {
        Kernel::ConvTranspose2d(window) => {
            let f = gpu.function("window", &format!("rlx_conv_transpose2d_{}", sfx(out)?))?;
            let bias = x.get(2).copied().unwrap_or(0);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&x[1]).arg(&bias).arg(&y).arg(window);
            // SAFETY: `rlx_conv_transpose2d_*`; only taps inside x are read,
            // the weight holds in_c * out_c / groups * kh * kw elements (planned).
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::GatherElements(a) => {
            let f = gpu.function("indexing", &format!("rlx_gather_elements_{}", sfx(out)?))?;
            let (layout, count, axis_stride, len) = index_args(a)?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&x[1])
                .arg(&y)
                .arg(&count)
                .arg(&layout)
                .arg(&axis_stride)
                .arg(&len)
                .arg(&flag);
            // SAFETY: `rlx_gather_elements_*`; indices are bounds-checked in
            // the kernel, the other coordinates lie inside x (planned).
            unsafe { l.launch(grid_stride(count as usize)) }?;
        }
        Kernel::ScatterAdd(a) => {
            // The base first (a no-op when the output reuses its bytes).
            if x[0] != y {
                let width = out.dtype.size_bytes();
                let copy = gpu.function("movement", &format!("rlx_strided_copy_b{width}"))?;
                let one = Layout::new(&[out.numel()], &[1], &[1])?;
                let zero = 0i64;
                let mut l = gpu.stream().launch_builder(&copy);
                l.arg(&x[0]).arg(&y).arg(&n).arg(&zero).arg(&zero).arg(&one);
                // SAFETY: base and output hold n elements of this width each.
                unsafe { l.launch(grid_stride(n as usize)) }?;
            }
            let f = gpu.function("indexing", &format!("rlx_scatter_add_{}", sfx(out)?))?;
            let (layout, count, axis_stride, len) = index_args(a)?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[1])
                .arg(&x[2])
                .arg(&y)
                .arg(&count)
                .arg(&layout)
                .arg(&axis_stride)
                .arg(&len)
                .arg(&flag);
            // SAFETY: `rlx_scatter_add_*`; indices are bounds-checked in
            // the kernel, updates hold `count` elements (the indices' dims).
            unsafe { l.launch(grid_stride(count as usize)) }?;
        }
        Kernel::TopK {
            shape,
            k,
            largest,
            indices,
        } => {
            let f = gpu.function("indexing", &format!("rlx_topk_{}", sfx(&step.inputs[0])?))?;
            // The unwanted output is a null pointer.
            let (vals, inds) = if *indices { (0u64, y) } else { (y, 0u64) };
            let [o, len, i] = shape.map(|d| d as i64);
            let (k, big) = (*k as i64, *largest as i32);
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0])
                .arg(&vals)
                .arg(&inds)
                .arg(&o)
                .arg(&len)
                .arg(&i)
                .arg(&k)
                .arg(&big);
            // SAFETY: `rlx_topk_*`; x holds outer * n * inner elements, the
            // output outer * k * inner (planned, k <= n).
            unsafe { l.launch(grid_stride(shape[0] * shape[2])) }?;
        }
        Kernel::Resize(r) => {
            let f = gpu.function("resample", &format!("rlx_resize_{}", sfx(out)?))?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(&n).arg(r);
            // SAFETY: `rlx_resize_*`; every tap is clamped inside x.
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        Kernel::Dequantize { format } => {
            let f = gpu.function("dequant", &format!("rlx_dequant_{format}"))?;
            let mut l = gpu.stream().launch_builder(&f);
            l.arg(&x[0]).arg(&y).arg(&n);
            // SAFETY: `rlx_dequant_*`; the bytes hold the whole blocks of n
            // values (32 or 256 a block: the IR's shape rule checks).
            unsafe { l.launch(grid_stride(n as usize)) }?;
        }
        other => {
            return Err(GpuError::BadInput(format!(
                "{other} is not an indexing / resampling step"
            )))
        }
    }
    Ok(())
}

/// The layout, element count, axis stride and axis length of an index step.
fn index_args(a: &AxisIndex) -> Result<(Layout, i64, i64, i64), GpuError> {
    let layout = Layout::new(&a.dims, &a.data_strides, &a.data_strides)?;
    let count = a.dims.iter().product::<usize>() as i64;
    Ok((layout, count, a.axis_stride, a.len as i64))
}
