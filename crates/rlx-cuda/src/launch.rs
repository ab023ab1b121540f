//! Typed launches of the NVRTC kernels on a [`CudaGpu`]: the host side of
//! each `.cu` module (shapes to launch geometry and layouts).

use crate::gpu::{CudaGpu, GpuError};
use crate::kernels::{BinaryOp, ReduceOp, UnaryOp};
use crate::step_launch::{KernelArg, KernelLaunch};
use cudarc::driver::{
    CudaSlice, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};

/// A float storage type with kernels: its entry-point suffix.
pub trait GpuFloat: DeviceRepr + ValidAsZeroBits + Copy + Default + 'static {
    /// `f32`, `f16` or `bf16`.
    const SUFFIX: &'static str;
}
impl GpuFloat for f32 {
    const SUFFIX: &'static str = "f32";
}
impl GpuFloat for half::f16 {
    const SUFFIX: &'static str = "f16";
}
impl GpuFloat for half::bf16 {
    const SUFFIX: &'static str = "bf16";
}

/// The most dimensions a layout carries (`RLX_MAX_RANK` in `common.cuh`).
pub const MAX_RANK: usize = 8;

/// `struct Layout` of `common.cuh`: output dims and two operands' element
/// strides (0 along a broadcast dimension).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    rank: i32,
    dims: [i64; MAX_RANK],
    a_strides: [i64; MAX_RANK],
    b_strides: [i64; MAX_RANK],
}

// SAFETY: plain `repr(C)` integers, laid out as the C struct.
unsafe impl DeviceRepr for Layout {}

impl Layout {
    /// A layout over `dims` with the given strides (at most [`MAX_RANK`]).
    pub fn new(dims: &[usize], a: &[i64], b: &[i64]) -> Result<Layout, GpuError> {
        if dims.len() > MAX_RANK || a.len() != dims.len() || b.len() != dims.len() {
            return Err(GpuError::BadInput(format!(
                "layout of rank {} (strides {} / {}): at most {MAX_RANK} and one stride per dim",
                dims.len(),
                a.len(),
                b.len()
            )));
        }
        let mut l = Layout {
            rank: dims.len() as i32,
            ..Layout::default()
        };
        for (i, &d) in dims.iter().enumerate() {
            l.dims[i] = d as i64;
            l.a_strides[i] = a[i];
            l.b_strides[i] = b[i];
        }
        Ok(l)
    }
}

/// Row-major element strides of `dims`.
pub fn contiguous_strides(dims: &[usize]) -> Vec<i64> {
    let mut s = vec![0i64; dims.len()];
    let mut acc = 1i64;
    for i in (0..dims.len()).rev() {
        s[i] = acc;
        acc *= dims[i] as i64;
    }
    s
}

/// Two operands broadcast together: the output dims and each operand's
/// element strides over them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Broadcast {
    /// The output dims.
    pub dims: Vec<usize>,
    /// Operand a's strides (0 where it is broadcast).
    pub a_strides: Vec<i64>,
    /// Operand b's strides.
    pub b_strides: Vec<i64>,
}

/// numpy broadcasting of two shapes.
pub fn broadcast(a: &[usize], b: &[usize]) -> Result<Broadcast, GpuError> {
    let rank = a.len().max(b.len());
    let pad = |d: &[usize]| -> Vec<usize> {
        let mut v = vec![1; rank - d.len()];
        v.extend_from_slice(d);
        v
    };
    let (pa, pb) = (pad(a), pad(b));
    let (sa, sb) = (contiguous_strides(&pa), contiguous_strides(&pb));
    let mut out = Vec::with_capacity(rank);
    let (mut oa, mut ob) = (Vec::with_capacity(rank), Vec::with_capacity(rank));
    for i in 0..rank {
        let d = match (pa[i], pb[i]) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(GpuError::BadInput(format!(
                    "shapes {a:?} and {b:?} do not broadcast"
                )))
            }
        };
        out.push(d);
        oa.push(if pa[i] == 1 && d != 1 { 0 } else { sa[i] });
        ob.push(if pb[i] == 1 && d != 1 { 0 } else { sb[i] });
    }
    Ok(Broadcast {
        dims: out,
        a_strides: oa,
        b_strides: ob,
    })
}

pub(crate) fn grid_stride(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, 65_535) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub(crate) fn per_row(rows: usize) -> Result<LaunchConfig, GpuError> {
    let grid = u32::try_from(rows.max(1))
        .map_err(|_| GpuError::BadInput(format!("{rows} rows: more than a grid holds")))?;
    Ok(LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    })
}

impl CudaGpu {
    /// `op(x)` elementwise.
    pub fn unary<T: GpuFloat>(
        &self,
        x: &CudaSlice<T>,
        op: UnaryOp,
    ) -> Result<CudaSlice<T>, GpuError> {
        let f = self.function("elementwise", &format!("rlx_unary_{}", T::SUFFIX))?;
        let mut y = self.zeros::<T>(x.len())?;
        let (n, code) = (x.len() as i64, op as i32);
        let mut l = self.stream().launch_builder(&f);
        l.arg(x).arg(&mut y).arg(&n).arg(&code);
        // SAFETY: the signature matches `rlx_unary_*`; both buffers hold n elements.
        unsafe { l.launch(grid_stride(x.len())) }?;
        Ok(y)
    }

    /// `op(a, b)` with numpy broadcasting; returns the result and its dims.
    pub fn binary<T: GpuFloat>(
        &self,
        a: (&CudaSlice<T>, &[usize]),
        b: (&CudaSlice<T>, &[usize]),
        op: BinaryOp,
    ) -> Result<(CudaSlice<T>, Vec<usize>), GpuError> {
        let Broadcast {
            dims,
            a_strides: sa,
            b_strides: sb,
        } = broadcast(a.1, b.1)?;
        let layout = Layout::new(&dims, &sa, &sb)?;
        let total: usize = dims.iter().product();
        let f = self.function("elementwise", &format!("rlx_binary_{}", T::SUFFIX))?;
        let mut y = self.zeros::<T>(total)?;
        let (n, code) = (total as i64, op as i32);
        let mut l = self.stream().launch_builder(&f);
        l.arg(a.0)
            .arg(b.0)
            .arg(&mut y)
            .arg(&n)
            .arg(&code)
            .arg(&layout);
        // SAFETY: matches `rlx_binary_*`; the layout's strides stay inside a and b.
        unsafe { l.launch(grid_stride(total)) }?;
        Ok((y, dims))
    }

    /// Reduces x viewed as `[outer, n, inner]` over the middle axis.
    pub fn reduce<T: GpuFloat>(
        &self,
        x: &CudaSlice<T>,
        [outer, n, inner]: [usize; 3],
        op: ReduceOp,
    ) -> Result<CudaSlice<T>, GpuError> {
        check_len(x.len(), outer * n * inner, "reduce input")?;
        let f = self.function("reduce", &format!("rlx_reduce_{}", T::SUFFIX))?;
        let mut y = self.zeros::<T>(outer * inner)?;
        let (o, nn, i, code) = (outer as i64, n as i64, inner as i64, op as i32);
        let mut l = self.stream().launch_builder(&f);
        l.arg(x).arg(&mut y).arg(&o).arg(&nn).arg(&i).arg(&code);
        // SAFETY: matches `rlx_reduce_*`; one block per output element.
        unsafe { l.launch(per_row(outer * inner)?) }?;
        Ok(y)
    }

    /// Softmax (or log-softmax) over the last axis of `[rows, n]`.
    pub fn softmax<T: GpuFloat>(
        &self,
        x: &CudaSlice<T>,
        [rows, n]: [usize; 2],
        log: bool,
    ) -> Result<CudaSlice<T>, GpuError> {
        check_len(x.len(), rows * n, "softmax input")?;
        let f = self.function("softmax", &format!("rlx_softmax_{}", T::SUFFIX))?;
        let mut y = self.zeros::<T>(x.len())?;
        let (r, nn, lg) = (rows as i64, n as i64, log as i32);
        let mut l = self.stream().launch_builder(&f);
        l.arg(x).arg(&mut y).arg(&r).arg(&nn).arg(&lg);
        // SAFETY: matches `rlx_softmax_*`; one block per row.
        unsafe { l.launch(per_row(rows)?) }?;
        Ok(y)
    }

    /// Layer norm over the last axis of `[rows, n]` with scale and shift of n.
    pub fn layer_norm<T: GpuFloat>(
        &self,
        x: &CudaSlice<T>,
        gamma: &CudaSlice<T>,
        beta: &CudaSlice<T>,
        [rows, n]: [usize; 2],
        eps: f32,
    ) -> Result<CudaSlice<T>, GpuError> {
        check_len(x.len(), rows * n, "layer norm input")?;
        check_len(gamma.len(), n, "layer norm scale")?;
        check_len(beta.len(), n, "layer norm shift")?;
        let f = self.function("norm", &format!("rlx_layer_norm_{}", T::SUFFIX))?;
        let mut y = self.zeros::<T>(x.len())?;
        let (r, nn) = (rows as i64, n as i64);
        let mut l = self.stream().launch_builder(&f);
        l.arg(x)
            .arg(gamma)
            .arg(beta)
            .arg(&mut y)
            .arg(&r)
            .arg(&nn)
            .arg(&eps);
        // SAFETY: matches `rlx_layer_norm_*`; gamma / beta hold n elements.
        unsafe { l.launch(per_row(rows)?) }?;
        Ok(y)
    }

    /// RMS norm over the last axis of `[rows, n]` with a scale of n.
    pub fn rms_norm<T: GpuFloat>(
        &self,
        x: &CudaSlice<T>,
        gamma: &CudaSlice<T>,
        [rows, n]: [usize; 2],
        eps: f32,
    ) -> Result<CudaSlice<T>, GpuError> {
        check_len(x.len(), rows * n, "rms norm input")?;
        check_len(gamma.len(), n, "rms norm scale")?;
        let f = self.function("norm", &format!("rlx_rms_norm_{}", T::SUFFIX))?;
        let mut y = self.zeros::<T>(x.len())?;
        let (r, nn) = (rows as i64, n as i64);
        let mut l = self.stream().launch_builder(&f);
        l.arg(x).arg(gamma).arg(&mut y).arg(&r).arg(&nn).arg(&eps);
        // SAFETY: matches `rlx_rms_norm_*`.
        unsafe { l.launch(per_row(rows)?) }?;
        Ok(y)
    }

    /// Rows `idx` of a `[rows, row_len]` table; an index outside
    /// `-rows..rows` is an error naming its position.
    pub fn gather_rows<T: GpuFloat>(
        &self,
        table: &CudaSlice<T>,
        [rows, row_len]: [usize; 2],
        idx: &CudaSlice<i64>,
    ) -> Result<CudaSlice<T>, GpuError> {
        check_len(table.len(), rows * row_len, "gather table")?;
        let f = self.function("gather", &format!("rlx_gather_{}", T::SUFFIX))?;
        let total = idx.len() * row_len;
        let mut y = self.zeros::<T>(total)?;
        let mut bad = self.zeros::<i64>(1)?;
        let (c, rl, r) = (idx.len() as i64, row_len as i64, rows as i64);
        let mut l = self.stream().launch_builder(&f);
        l.arg(table)
            .arg(idx)
            .arg(&mut y)
            .arg(&c)
            .arg(&rl)
            .arg(&r)
            .arg(&mut bad);
        // SAFETY: matches `rlx_gather_*`; rows are bounds-checked in the kernel.
        unsafe { l.launch(grid_stride(total)) }?;
        let flag = self.download(&bad)?[0];
        if flag != 0 {
            let pos = (flag - 1) as usize;
            let value = self.download(idx)?[pos];
            return Err(GpuError::BadInput(format!(
                "gather: index {value} at position {pos} is outside a table of {rows} rows"
            )));
        }
        Ok(y)
    }

    /// `x` (dims `dims`) with its axes permuted by `perm` (numpy `transpose`).
    pub fn permute<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        x: &CudaSlice<T>,
        dims: &[usize],
        perm: &[usize],
    ) -> Result<CudaSlice<T>, GpuError> {
        let mut seen = vec![false; dims.len()];
        if perm.len() != dims.len()
            || perm
                .iter()
                .any(|&p| p >= dims.len() || std::mem::replace(&mut seen[p], true))
        {
            return Err(GpuError::BadInput(format!(
                "{perm:?} is not a permutation of {} axes",
                dims.len()
            )));
        }
        check_len(x.len(), dims.iter().product(), "permute input")?;
        let src = contiguous_strides(dims);
        let out_dims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
        let x_strides: Vec<i64> = perm.iter().map(|&p| src[p]).collect();
        let layout = Layout::new(&out_dims, &x_strides, &contiguous_strides(&out_dims))?;
        let width = std::mem::size_of::<T>();
        if ![1, 2, 4, 8].contains(&width) {
            return Err(GpuError::BadInput(format!(
                "no strided copy for {width}-byte elements"
            )));
        }
        let f = self.function("movement", &format!("rlx_strided_copy_b{width}"))?;
        let mut y = self.zeros::<T>(x.len())?;
        let (n, zero) = (x.len() as i64, 0i64);
        let mut l = self.stream().launch_builder(&f);
        l.arg(x)
            .arg(&mut y)
            .arg(&n)
            .arg(&zero)
            .arg(&zero)
            .arg(&layout);
        // SAFETY: matches `rlx_strided_copy_b*` for this element width;
        // the layout is a permutation of x's own strides.
        unsafe { l.launch(grid_stride(x.len())) }?;
        Ok(y)
    }

    /// `x` converted elementwise (`rlx_cast_<from>_<to>`).
    pub fn cast<I: DeviceRepr, O: DeviceRepr + ValidAsZeroBits>(
        &self,
        x: &CudaSlice<I>,
        from: &str,
        to: &str,
    ) -> Result<CudaSlice<O>, GpuError> {
        let f = self.function("cast", &format!("rlx_cast_{from}_{to}"))?;
        let mut y = self.zeros::<O>(x.len())?;
        let n = x.len() as i64;
        let mut l = self.stream().launch_builder(&f);
        l.arg(x).arg(&mut y).arg(&n);
        // SAFETY: the caller names the element types of I and O.
        unsafe { l.launch(grid_stride(x.len())) }?;
        Ok(y)
    }
}

impl CudaGpu {
    /// Launches a described kernel ([`crate::step_launch`]) on the stream.
    ///
    /// # Safety
    /// The arguments must match the entry point's signature and every
    /// address must hold what the kernel reads and writes at this geometry.
    pub(crate) unsafe fn launch_described(&self, k: &KernelLaunch) -> Result<(), GpuError> {
        let f = self.function(k.module, &k.entry)?;
        let mut l = self.stream().launch_builder(&f);
        for a in &k.args {
            push(&mut l, a);
        }
        let cfg = LaunchConfig {
            grid_dim: k.grid,
            block_dim: k.block,
            shared_mem_bytes: 0,
        };
        // SAFETY: the caller's promise.
        unsafe { l.launch(cfg) }?;
        Ok(())
    }
}

fn push<'a>(l: &mut LaunchArgs<'a>, a: &'a KernelArg) {
    match a {
        KernelArg::Ptr(v) | KernelArg::U64(v) => l.arg(v),
        KernelArg::I64(v) => l.arg(v),
        KernelArg::I32(v) => l.arg(v),
        KernelArg::F32(v) => l.arg(v),
        KernelArg::F64(v) => l.arg(v),
        KernelArg::Layout(v) => l.arg(v),
        KernelArg::Window(v) => l.arg(v),
        KernelArg::Pad(v) => l.arg(v),
        KernelArg::Resize(v) => l.arg(v),
    };
}

fn check_len(got: usize, want: usize, what: &str) -> Result<(), GpuError> {
    if got == want {
        Ok(())
    } else {
        Err(GpuError::BadInput(format!(
            "{what}: {got} elements, the shape needs {want}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_follows_numpy() {
        let b = broadcast(&[2, 1, 3], &[4, 1]).unwrap();
        assert_eq!(b.dims, [2, 4, 3]);
        assert_eq!(b.a_strides, [3, 0, 1]);
        assert_eq!(b.b_strides, [0, 1, 0]);
        let err = broadcast(&[2, 3], &[4]).unwrap_err().to_string();
        assert!(err.contains("[2, 3] and [4] do not broadcast"), "{err}");
    }

    #[test]
    fn a_layout_beyond_eight_dims_is_refused() {
        let dims = [1usize; 9];
        let s = [1i64; 9];
        assert!(Layout::new(&dims, &s, &s)
            .unwrap_err()
            .to_string()
            .contains("rank 9"));
        assert_eq!(std::mem::size_of::<Layout>(), 8 + 3 * 8 * 8);
    }
}
