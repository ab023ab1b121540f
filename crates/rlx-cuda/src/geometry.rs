//! The C structs the window, pad and resize kernels take by value
//! (`Window2d` of `common.cuh`, `PadLayout` of `pad.cu`, `Resize` of
//! `resample.cu`), built by the planner from an
//! op's shapes and attributes.

use crate::launch::MAX_RANK;
use cudarc::driver::DeviceRepr;
use rlx_ir::op::Window;

/// `struct Window2d` of `common.cuh`: an NCHW window op from
/// `x [batch, in_c, h, w]` to `y [batch, out_c, oh, ow]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window2d {
    /// Batch.
    pub batch: i64,
    /// Input channels.
    pub in_c: i64,
    /// Input height.
    pub h: i64,
    /// Input width.
    pub w: i64,
    /// Output channels (the input channels for pooling).
    pub out_c: i64,
    /// Channel groups (1 for pooling).
    pub groups: i64,
    /// Kernel height.
    pub kh: i64,
    /// Kernel width.
    pub kw: i64,
    /// Output height.
    pub oh: i64,
    /// Output width.
    pub ow: i64,
    /// Vertical stride.
    pub sh: i64,
    /// Horizontal stride.
    pub sw: i64,
    /// Padding above.
    pub ph: i64,
    /// Padding on the left.
    pub pw: i64,
    /// Vertical dilation.
    pub dh: i64,
    /// Horizontal dilation.
    pub dw: i64,
    /// Padded height (`h` plus both pads).
    pub eh: i64,
    /// Padded width.
    pub ew: i64,
}

// SAFETY: plain `repr(C)` i64s, laid out as the C struct.
unsafe impl DeviceRepr for Window2d {}

impl Window2d {
    /// The window of an op from `x` to `y` (both `[N, C, *sp]` with one or
    /// two spatial dims; a 1-d op is planned as height 1) with spatial
    /// kernel `kernel`, `out_c` output channels and `groups`.
    pub fn new(
        x: &[usize],
        y: &[usize],
        kernel: &[usize],
        w: &Window,
        groups: usize,
    ) -> Result<Window2d, String> {
        let sp = x.len().saturating_sub(2);
        if !(1..=2).contains(&sp)
            || y.len() != x.len()
            || kernel.len() != sp
            || w.stride.len() != sp
            || w.padding.len() != sp
            || w.dilation.len() != sp
        {
            return Err(format!(
                "CUDA windows are 1-d or 2-d NCHW: x {x:?} -> {y:?}, kernel {kernel:?}, {w:?}"
            ));
        }
        // Height 1 in front of a 1-d op's only spatial dim.
        let lead = 2 - sp;
        let pick = |v: &[usize], k: usize, one: usize| if k < lead { one } else { v[k - lead] };
        let two = |v: &[usize], one: usize| [pick(v, 0, one), pick(v, 1, one)];
        let (hw, ohw) = (two(&x[2..], 1), two(&y[2..], 1));
        let (k, s, d) = (two(kernel, 1), two(&w.stride, 1), two(&w.dilation, 1));
        let before: Vec<usize> = w.padding.iter().map(|p| p.0).collect();
        let extent: Vec<usize> = (0..sp)
            .map(|a| x[2 + a] + w.padding[a].0 + w.padding[a].1)
            .collect();
        let (p, e) = (two(&before, 0), two(&extent, 1));
        let i = |v: usize| v as i64;
        Ok(Window2d {
            batch: i(x[0]),
            in_c: i(x[1]),
            h: i(hw[0]),
            w: i(hw[1]),
            out_c: i(y[1]),
            groups: i(groups),
            kh: i(k[0]),
            kw: i(k[1]),
            oh: i(ohw[0]),
            ow: i(ohw[1]),
            sh: i(s[0]),
            sw: i(s[1]),
            ph: i(p[0]),
            pw: i(p[1]),
            dh: i(d[0]),
            dw: i(d[1]),
            eh: i(e[0]),
            ew: i(e[1]),
        })
    }
}

/// `struct PadLayout` of `pad.cu`: the padded and original dims and the
/// cells added in front of each axis.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PadLayout {
    /// Axes used.
    pub rank: i32,
    /// Output (padded) dims.
    pub out_dims: [i64; MAX_RANK],
    /// Input dims.
    pub in_dims: [i64; MAX_RANK],
    /// Cells before each axis.
    pub before: [i64; MAX_RANK],
}

// SAFETY: plain `repr(C)` integers, laid out as the C struct.
unsafe impl DeviceRepr for PadLayout {}

impl PadLayout {
    /// The layout of padding `x` to `y` with `before` cells in front of
    /// each axis (at most [`MAX_RANK`] axes).
    pub fn new(x: &[usize], y: &[usize], before: &[usize]) -> Result<PadLayout, String> {
        if x.len() > MAX_RANK || y.len() != x.len() || before.len() != x.len() {
            return Err(format!(
                "pad of {x:?} to {y:?} (before {before:?}): at most {MAX_RANK} axes, one pad each"
            ));
        }
        let mut l = PadLayout {
            rank: x.len() as i32,
            ..PadLayout::default()
        };
        for a in 0..x.len() {
            l.out_dims[a] = y[a] as i64;
            l.in_dims[a] = x[a] as i64;
            l.before[a] = before[a] as i64;
        }
        Ok(l)
    }
}

/// `struct Resize` of `resample.cu`: a nearest / linear resize of the
/// spatial dims of `[N, C, *sp]` (one to [`Resize::MAX_SPATIAL`] of them).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resize {
    /// `N * C`.
    pub planes: i64,
    /// Spatial dims used.
    pub rank: i64,
    /// Input spatial dims.
    pub input: [i64; 3],
    /// Output spatial dims.
    pub output: [i64; 3],
    /// Linear (else nearest).
    pub linear: i32,
    /// Align corner pixels (linear only).
    pub align_corners: i32,
}

// SAFETY: plain `repr(C)` integers, laid out as the C struct.
unsafe impl DeviceRepr for Resize {}

impl Resize {
    /// The most spatial dims the kernel resizes.
    pub const MAX_SPATIAL: usize = 3;

    /// The resize of `x` to `y` (both `[N, C, *sp]`).
    pub fn new(
        x: &[usize],
        y: &[usize],
        linear: bool,
        align_corners: bool,
    ) -> Result<Resize, String> {
        let sp = x.len().saturating_sub(2);
        if !(1..=Self::MAX_SPATIAL).contains(&sp) || y.len() != x.len() || x[..2] != y[..2] {
            return Err(format!(
                "a CUDA resize keeps N, C and resizes 1 to {} spatial dims, not {x:?} -> {y:?}",
                Self::MAX_SPATIAL
            ));
        }
        if (2..x.len()).any(|a| x[a] == 0 && y[a] != 0) {
            return Err(format!("resize of an empty spatial dim: {x:?} -> {y:?}"));
        }
        let mut r = Resize {
            planes: (x[0] * x[1]) as i64,
            rank: sp as i64,
            linear: linear as i32,
            align_corners: align_corners as i32,
            ..Resize::default()
        };
        for a in 0..sp {
            r.input[a] = x[2 + a] as i64;
            r.output[a] = y[2 + a] as i64;
        }
        Ok(r)
    }
}
