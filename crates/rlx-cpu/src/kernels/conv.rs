//! Convolution family: conv and transposed conv over the spatial dims of
//! `[N, C, *sp]` tensors, for any number of spatial dims (pooling, which
//! shares the tap table, is [`super::pool`]).
//!
//! Conv is im2col + GEMM, transposed conv is GEMM + col2im, both on the
//! shared float GEMM ([`super::gemm`]). All
//! walk one table of tap offsets ([`tap_offsets`]) built per call,
//! except conv over two spatial dims, whose depthwise kernel and row-wise
//! im2col live in [`super::conv2d`].

use super::conv2d::{as_f32, as_f32_mut, Conv2d};
use super::conv_epilogue::ConvEpilogue;
use super::gemm::{num_threads, GemmFloat, Strided};
use super::scalar::Real;
use super::{KernelResult, View, ViewMut};
use crate::with_real;
use rlx_ir::contiguous_strides;
use rlx_ir::op::{ChainStep, Window};
use rlx_ir::ops::conv::window_out_len;
use rlx_ir::{DType, Op};

/// Tap offset of a cell in the padding.
pub(super) const PAD: usize = usize::MAX;

/// Checks that a buffer holds `dims` elements of `want`, aligned for it.
pub(crate) fn check_buf(
    what: &str,
    dims: &[usize],
    dtype: DType,
    bytes: &[u8],
    want: DType,
) -> KernelResult {
    if dtype != want {
        return Err(fail!("{what} is {dtype}, expected {want}"));
    }
    let w = dtype.size_bytes();
    if bytes.len() != dims.iter().product::<usize>() * w
        || !(bytes.as_ptr() as usize).is_multiple_of(w)
    {
        return Err(fail!(
            "{what}: {} bytes do not hold {dtype}{dims:?}",
            bytes.len()
        ));
    }
    Ok(())
}

/// Calls `f` with every index of `dims`, row-major.
pub(crate) fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    if dims.contains(&0) {
        return;
    }
    let mut idx = vec![0; dims.len()];
    loop {
        f(&idx);
        let mut ax = dims.len();
        loop {
            if ax == 0 {
                return;
            }
            ax -= 1;
            idx[ax] += 1;
            if idx[ax] < dims[ax] {
                break;
            }
            idx[ax] = 0;
        }
    }
}

/// For kernel tap `r` (row-major over `k`) and window position `p`
/// (row-major over `pos`), entry `r * prod(pos) + p` is the row-major offset
/// into `len`-shaped data of `p * stride + r * dilation - pad_lo`, or [`PAD`].
/// Conv and pooling read the input there; transposed conv scatters to the
/// output there (with `len` the output and `pos` the input).
pub(super) fn tap_offsets(len: &[usize], k: &[usize], pos: &[usize], w: &Window) -> Vec<usize> {
    let d = len.len();
    let strides = contiguous_strides(len);
    let kp: Vec<usize> = k.iter().chain(pos).copied().collect();
    let mut taps = Vec::with_capacity(kp.iter().product());
    for_each_index(&kp, |i| {
        let mut off = 0;
        for ax in 0..d {
            let at =
                (i[d + ax] * w.stride[ax] + i[ax] * w.dilation[ax]).checked_sub(w.padding[ax].0);
            match at {
                Some(a) if a < len[ax] => off += a * strides[ax],
                _ => return taps.push(PAD),
            }
        }
        taps.push(off);
    });
    taps
}

/// `c[i, j] += sum_p a[i * rs + p * cs] * b[p, j]` (`a` is m x k through
/// strides `(rs, cs)`, `b` is k x n, `c` is m x n, both row-major).
fn gemm_acc<T: GemmFloat>(
    a: &[T],
    (rs, cs): (usize, usize),
    b: &[T],
    c: &mut [T],
    m: usize,
    k: usize,
    n: usize,
) {
    let a = Strided {
        data: a,
        offset: 0,
        rows: m,
        cols: k,
        row_stride: rs,
        col_stride: cs,
    };
    T::gemm_add(a, Strided::row_major(b, 0, k, n), c, num_threads());
}

/// Checked geometry of a conv / transposed conv call.
pub(super) struct ConvGeom {
    pub(super) batch: usize,
    pub(super) c: usize,
    pub(super) o: usize,
    pub(super) groups: usize,
    /// Product of the input spatial dims.
    pub(super) pin: usize,
    /// Product of the kernel dims.
    pub(super) kn: usize,
    /// Product of the output spatial dims.
    pub(super) pout: usize,
    /// The tap table (N-d conv only; empty for 2-D and transposed convs).
    taps: Vec<usize>,
    /// The 2-D geometry of a conv over two spatial dims.
    pub(super) two_d: Option<Conv2d>,
}

pub(super) fn check_window(w: &Window, sd: usize, pool: bool) -> KernelResult {
    let kernel_ok = if pool {
        w.kernel.len() == sd
    } else {
        w.kernel.is_empty() || w.kernel.len() == sd
    };
    if !kernel_ok || w.stride.len() != sd || w.padding.len() != sd || w.dilation.len() != sd {
        return Err(fail!("window {w:?} does not have {sd} spatial dims"));
    }
    if w.stride.contains(&0) || w.dilation.contains(&0) {
        return Err(fail!("window {w:?} has a zero stride or dilation"));
    }
    Ok(())
}

/// Validates `ins` / `out` of a conv, or of a transposed conv when
/// `output_padding` is given, and builds its tap table.
pub(super) fn conv_geom(
    w: &Window,
    output_padding: Option<&[usize]>,
    groups: usize,
    ins: &[View],
    out: &ViewMut,
) -> Result<ConvGeom, super::KernelError> {
    let name = if output_padding.is_some() {
        "conv_transpose"
    } else {
        "conv"
    };
    if !(2..=3).contains(&ins.len()) {
        return Err(fail!("{name} takes 2 or 3 inputs, given {}", ins.len()));
    }
    let (x, wt) = (&ins[0], &ins[1]);
    let r = x.dims.len();
    if r < 3 || wt.dims.len() != r || out.dims.len() != r {
        return Err(fail!(
            "{name} needs x, w and out of one rank >= 3, given {:?}, {:?}, {:?}",
            x.dims,
            wt.dims,
            out.dims
        ));
    }
    let sd = r - 2;
    check_window(w, sd, false)?;
    let (c, k) = (x.dims[1], &wt.dims[2..]);
    if !w.kernel.is_empty() && w.kernel != k {
        return Err(fail!(
            "window kernel {:?} does not match the weight {:?}",
            w.kernel,
            wt.dims
        ));
    }
    if k.contains(&0) {
        return Err(fail!("{name} weight {:?} has an empty kernel", wt.dims));
    }
    let o = out.dims[1];
    let transposed = output_padding.is_some();
    let ok = if transposed {
        wt.dims[0] == c && wt.dims[1] * groups == o
    } else {
        wt.dims[0] == o && wt.dims[1] * groups == c
    };
    if groups == 0
        || c % groups != 0
        || !o.is_multiple_of(groups)
        || !ok
        || out.dims[0] != x.dims[0]
    {
        return Err(fail!(
            "{name}: x {:?}, w {:?}, out {:?} do not match groups = {groups}",
            x.dims,
            wt.dims,
            out.dims
        ));
    }
    if let Some(op) = output_padding {
        if op.len() != sd {
            return Err(fail!("output_padding {op:?} needs {sd} entries"));
        }
    }
    let (sp_in, sp_out) = (&x.dims[2..], &out.dims[2..]);
    for ax in 0..sd {
        let (n, kk, s, (lo, hi), dil) = (
            sp_in[ax],
            k[ax],
            w.stride[ax],
            w.padding[ax],
            w.dilation[ax],
        );
        let want = match output_padding {
            Some(op) if n > 0 => ((n - 1) * s + dil * (kk - 1) + op[ax] + 1).checked_sub(lo + hi),
            Some(_) => None,
            None => window_out_len(n, kk, s, (lo, hi), dil),
        };
        if want != Some(sp_out[ax]) {
            return Err(fail!(
                "{name}: out {:?} does not match x {:?}, w {:?}, window {w:?}",
                out.dims,
                x.dims,
                wt.dims
            ));
        }
    }
    let dt = x.dtype;
    check_buf("x", x.dims, dt, x.bytes, dt)?;
    check_buf("w", wt.dims, wt.dtype, wt.bytes, dt)?;
    check_buf("out", out.dims, out.dtype, out.bytes, dt)?;
    if let Some(b) = ins.get(2) {
        if b.dims != [o] {
            return Err(fail!("bias {:?} must be [{o}]", b.dims));
        }
        check_buf("bias", b.dims, b.dtype, b.bytes, dt)?;
    }
    let two_d = (sd == 2 && !transposed).then(|| Conv2d {
        batch: x.dims[0],
        c,
        o,
        groups,
        h: sp_in[0],
        w: sp_in[1],
        oh: sp_out[0],
        ow: sp_out[1],
        kh: k[0],
        kw: k[1],
        s: (w.stride[0], w.stride[1]),
        d: (w.dilation[0], w.dilation[1]),
        p: (w.padding[0].0, w.padding[1].0),
    });
    // Transposed conv scatters row by row (`super::conv_transpose`), no table.
    let taps = if transposed || two_d.is_some() {
        Vec::new()
    } else {
        tap_offsets(sp_in, k, sp_out, w)
    };
    let prod = |d: &[usize]| d.iter().product();
    Ok(ConvGeom {
        batch: x.dims[0],
        c,
        o,
        groups,
        pin: prod(sp_in),
        kn: prod(k),
        pout: prod(sp_out),
        taps,
        two_d,
    })
}

/// Winograd on unless `RLX_CPU_WINOGRAD=0` (read once; an A/B switch).
pub(super) fn winograd_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| rlx_ir::env::vars::CPU_WINOGRAD.get().ok().flatten() != Some(false))
}

/// Fills every `[n, o]` plane of `y` with `bias[o]` (or zero).
pub(super) fn fill_bias<T: Real>(y: &mut [T], bias: Option<&[T]>, o: usize, plane: usize) {
    if plane == 0 {
        return;
    }
    for (i, p) in y.chunks_mut(plane).enumerate() {
        p.fill(bias.map_or(T::ZERO, |b| b[i % o]));
    }
}

/// An f32 conv weight the executor prepared once, read instead of the
/// plain one.
#[derive(Clone, Copy)]
pub(crate) enum Prepared<'a> {
    /// Packed in panels of this width ([`super::conv_packed`]).
    Packed(usize),
    /// Transformed for Winograd F(2,3) ([`super::winograd::transform_weights`]).
    Winograd(&'a [f32]),
    /// Transformed for the blocked Winograd F(4,3)
    /// ([`super::winograd_blocked::pack`]), `x` and `y` blocked.
    WinogradBlocked(&'a [f32]),
    /// Packed in 16-channel blocks ([`super::conv_nchwc::pack`]), `x` /
    /// `y` in the layouts the executor planned for them.
    Nchwc(&'a [f32], super::conv_nchwc::BlockedIo),
    /// A 1x1 weight packed as the NCHW kernel's left operand
    /// ([`super::conv_pointwise::prepared_weights`]).
    Pointwise(&'a [f32]),
    /// A 1x1 weight packed in 16-channel output blocks
    /// ([`super::conv_pointwise_blocked::pack`]), `x` / `y` in the layouts
    /// the executor planned for them.
    PointwiseBlocked(&'a [f32], super::conv_nchwc::BlockedIo),
    /// A depthwise conv of the 16-lane kernel ([`super::conv_depthwise_small`];
    /// planes over 28 x 28 in row bands) with `x` / `y` in the layouts the
    /// executor planned (the weight is plain).
    DepthwiseBlocked(super::conv_nchwc::BlockedIo),
    /// A 3-channel stem weight packed for the stem kernel
    /// ([`super::conv_stem::prepared_weights`]), `y` in the layout the
    /// executor planned (`x` is NCHW).
    Stem(&'a [f32], super::conv_nchwc::BlockedIo),
}

/// Conv of `ins` into `out`, then `epi` on each block of output channels
/// while it is in cache; `prepared`: the executor's form of the f32 weight.
fn conv_real<T: GemmFloat>(
    g: &ConvGeom,
    ins: &[View],
    out: &mut ViewMut,
    epi: Option<&ConvEpilogue>,
    prepared: Option<Prepared>,
) -> KernelResult {
    if let Some(Prepared::Winograd(u)) = prepared {
        let g2 = g
            .two_d
            .as_ref()
            .filter(|g2| g2.takes_winograd_weights(u.len()));
        let Some(g2) = g2.filter(|_| ins[0].dtype == DType::F32) else {
            return Err(fail!(
                "conv: Winograd weights on a conv Winograd does not take"
            ));
        };
        let y = out.slice::<f32>();
        fill_bias(y, ins.get(2).map(|b| b.slice::<f32>()), g.o, g.pout);
        return g2.winograd_transformed(ins[0].slice::<f32>(), u, y, epi);
    }
    if let Some(Prepared::WinogradBlocked(u)) = prepared {
        let g2 = g.two_d.as_ref();
        let Some(g2) = g2
            .filter(|g2| ins[0].dtype == DType::F32 && g2.takes_winograd_blocked_weights(u.len()))
        else {
            return Err(fail!(
                "conv: blocked Winograd weights on a conv the blocked Winograd kernel does not take"
            ));
        };
        let bias = ins.get(2).map(|b| b.slice::<f32>());
        return g2.winograd_blocked(ins[0].slice::<f32>(), u, bias, out.slice::<f32>(), epi);
    }
    if let Some(Prepared::Nchwc(wp, io)) = prepared {
        let g2 = g
            .two_d
            .as_ref()
            .filter(|g2| g2.takes_nchwc_weights(wp.len()));
        let Some(g2) = g2.filter(|_| ins[0].dtype == DType::F32) else {
            return Err(fail!(
                "conv: NCHWc weights on a conv the NCHWc kernel does not take"
            ));
        };
        let bias = ins.get(2).map(|b| b.slice::<f32>());
        return g2.nchwc_packed_io(ins[0].slice::<f32>(), wp, bias, out.slice::<f32>(), epi, io);
    }
    if let Some(Prepared::Pointwise(wp)) = prepared {
        let g2 = g.two_d.as_ref();
        let Some(g2) =
            g2.filter(|g2| ins[0].dtype == DType::F32 && g2.takes_pointwise_weights(wp.len()))
        else {
            return Err(fail!(
                "conv: a packed 1x1 weight on a conv the 1x1 kernel does not take"
            ));
        };
        let bias = ins.get(2).map(|b| b.slice::<f32>());
        return g2.pointwise_packed(ins[0].slice::<f32>(), wp, bias, out.slice::<f32>(), epi);
    }
    if let Some(Prepared::PointwiseBlocked(wp, io)) = prepared {
        let g2 = g.two_d.as_ref();
        let Some(g2) =
            g2.filter(|g2| ins[0].dtype == DType::F32 && g2.takes_pointwise_blocked(wp.len(), io))
        else {
            return Err(fail!(
                "conv: a blocked 1x1 weight on a conv the blocked 1x1 kernel does not take"
            ));
        };
        let bias = ins.get(2).map(|b| b.slice::<f32>());
        return g2.pointwise_blocked(ins[0].slice::<f32>(), wp, bias, out.slice::<f32>(), epi, io);
    }
    if let Some(Prepared::DepthwiseBlocked(io)) = prepared {
        let g2 = g.two_d.as_ref();
        let Some(g2) =
            g2.filter(|g2| ins[0].dtype == DType::F32 && g2.depthwise_small_takes(io, epi))
        else {
            return Err(fail!(
                "conv: a blocked layout on a depthwise conv the small-plane kernel does not take"
            ));
        };
        let (x, wt) = (ins[0].slice::<f32>(), ins[1].slice::<f32>());
        let bias = ins.get(2).map(|b| b.slice::<f32>());
        return g2.depthwise_small(x, wt, bias, out.slice::<f32>(), epi, io);
    }
    if let Some(Prepared::Stem(wp, io)) = prepared {
        let g2 = g.two_d.as_ref();
        let Some(g2) = g2.filter(|g2| {
            ins[0].dtype == DType::F32
                && g2.takes_stem_weights(wp.len())
                && !io.input
                && (!io.output || g2.stem_writes_blocked())
        }) else {
            return Err(fail!(
                "conv: a stem weight (or layout) on a conv the stem kernel does not take"
            ));
        };
        let bias = ins.get(2).map(|b| b.slice::<f32>());
        let (x, y) = (ins[0].slice::<f32>(), out.slice::<f32>());
        return g2.stem_packed(x, wp, bias, y, epi, io.output);
    }
    if let Some(Prepared::Packed(nr)) = prepared {
        let g2 = g.two_d.as_ref().filter(|g2| g2.takes_packed_weight());
        let Some(g2) = g2.filter(|_| ins[0].dtype == DType::F32) else {
            return Err(fail!(
                "conv: a packed weight on a conv the packed path does not take"
            ));
        };
        let y = out.slice::<f32>();
        fill_bias(y, ins.get(2).map(|b| b.slice::<f32>()), g.o, g.pout);
        return g2.packed_gemm(ins[0].slice::<f32>(), ins[1].slice::<f32>(), nr, y, epi);
    }
    let (x, wt) = (ins[0].slice::<T>(), ins[1].slice::<T>());
    let y = out.slice::<T>();
    let bias = ins.get(2).map(|b| b.slice::<T>());
    if let Some(g2) = g.two_d.as_ref().filter(|g2| g2.is_depthwise()) {
        // Small f32 planes: 16 channels in the vector lanes.
        if g2.depthwise_small_wins() {
            let b32 = bias.map(as_f32);
            if let (Some(x), Some(wt), Some(y), Some(b)) = (
                as_f32(x),
                as_f32(wt),
                as_f32_mut(&mut *y),
                b32.unwrap_or(Some(&[])),
            ) {
                return g2.depthwise_small(x, wt, bias.map(|_| b), y, epi, Default::default());
            }
        }
        return g2.depthwise(x, wt, bias, y, epi);
    }
    // 1x1 on NCHW, the blocked-layout kernel or the stem kernel: they write the bias.
    let own_bias = |g2: &&Conv2d| g2.pointwise_nchw_wins() || g2.nchwc_wins() || g2.stem_wins();
    if let Some(g2) = g.two_d.as_ref().filter(own_bias) {
        let bias32 = bias.map(as_f32);
        if let (Some(x), Some(wt), Some(y), Some(b)) = (
            as_f32(x),
            as_f32(wt),
            as_f32_mut(&mut *y),
            bias32.unwrap_or(Some(&[])),
        ) {
            let b = bias.map(|_| b);
            return if g2.pointwise_nchw_wins() {
                g2.pointwise_nchw(x, wt, b, y, epi)
            } else if g2.stem_wins() {
                g2.stem(x, wt, b, y, epi)
            } else {
                g2.nchwc(x, wt, b, y, epi)
            };
        }
    }
    fill_bias(y, bias, g.o, g.pout);
    if g.pout == 0 {
        return Ok(());
    }
    let (cg, og) = (g.c / g.groups, g.o / g.groups);
    if let Some(g2) = g.two_d.as_ref() {
        if g2.direct_wins() {
            if let (Some(x), Some(wt), Some(y)) = (as_f32(x), as_f32(wt), as_f32_mut(&mut *y)) {
                return g2.direct(x, wt, y, epi);
            }
        }
        if winograd_enabled() && g2.winograd_wins(cg, og) {
            return g2.winograd(x, wt, y, epi);
        }
        if !g2.is_pointwise() {
            return g2.im2col_gemm(x, wt, y, epi);
        }
    }
    let rows = cg * g.kn;
    let mut col = vec![T::ZERO; if g.two_d.is_some() { 0 } else { rows * g.pout }];
    for n in 0..g.batch {
        for gi in 0..g.groups {
            let xg = &x[(n * g.c + gi * cg) * g.pin..][..cg * g.pin];
            let col: &[T] = match &g.two_d {
                // 1x1 stride 1 unpadded (the rest took `im2col_gemm`).
                Some(_) => xg,
                None => {
                    // col[(c, tap), p] = x[c, tap at p]: one channel's taps per chunk.
                    for (c, chunk) in col.chunks_mut(g.kn * g.pout).enumerate() {
                        let xc = &xg[c * g.pin..][..g.pin];
                        for (v, &t) in chunk.iter_mut().zip(&g.taps) {
                            *v = if t == PAD { T::ZERO } else { xc[t] };
                        }
                    }
                    &col
                }
            };
            let wg = &wt[gi * og * rows..][..og * rows];
            let yg = &mut y[(n * g.o + gi * og) * g.pout..][..og * g.pout];
            gemm_acc(wg, (rows, 1), col, yg, og, rows, g.pout);
            if let Some(epi) = epi {
                epi.apply(yg, n, gi * og..(gi + 1) * og)?;
            }
        }
    }
    Ok(())
}

/// N-d convolution (PyTorch cross-correlation with zero padding).
pub(crate) fn conv(w: &Window, groups: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
    conv_with(w, groups, None, ins, out)
}

/// [`conv`], its weight in the executor's `prepared` form when given.
fn conv_with(
    w: &Window,
    groups: usize,
    prepared: Option<Prepared>,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let g = conv_geom(w, None, groups, ins, out)?;
    with_real!(ins[0].dtype, ins, out, |i, o| conv_real::<T>(&g, i, o, None, prepared); T)
}

/// `Op::Conv` or `Op::FusedConv` whose weight the executor packed in
/// panels of `nr` ([`super::conv_packed`]).
pub(crate) fn conv_packed_weights(
    op: &Op,
    nr: usize,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    conv_prepared(op, Prepared::Packed(nr), ins, out)
}

/// `Op::Conv` or `Op::FusedConv` run on weights the executor prepared
/// (the plain weight is still `ins[1]`, for the checks).
pub(crate) fn conv_prepared(
    op: &Op,
    prepared: Prepared,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    conv_prepared_layout(op, prepared, 0, ins, out)
}

/// [`conv_prepared`] with the epilogue's extras whose bit is set in
/// `blocked_extras` (bit `k`: extra `k`) in the blocked layout
/// ([`ConvEpilogue::with_blocked_extras`]; planned by `nchwc_layout.rs`).
pub(crate) fn conv_prepared_layout(
    op: &Op,
    prepared: Prepared,
    blocked_extras: u64,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    match op {
        Op::Conv { .. } if blocked_extras != 0 => Err(fail!(
            "conv: a blocked extra input on a conv with no epilogue"
        )),
        Op::Conv { window, groups } => conv_with(window, *groups, Some(prepared), ins, out),
        Op::FusedConv {
            window,
            groups,
            bias,
            epilogue,
        } => fused_conv_with(
            window,
            *groups,
            (*bias, epilogue),
            (Some(prepared), blocked_extras),
            ins,
            out,
        ),
        _ => Err(fail!("{} has no prepared conv weight", op.mnemonic())),
    }
}

/// `Op::FusedConv`: conv of `x, w [, bias]` with `epilogue` over the
/// extras applied block by block as the output is produced.
pub(crate) fn fused_conv(
    w: &Window,
    groups: usize,
    bias: bool,
    epilogue: &[ChainStep],
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    fused_conv_with(w, groups, (bias, epilogue), (None, 0), ins, out)
}

/// [`fused_conv`], its weight in the executor's `prepared` form when given.
/// `blocked_extras` as [`conv_prepared_layout`].
fn fused_conv_with(
    w: &Window,
    groups: usize,
    (bias, epilogue): (bool, &[ChainStep]),
    (prepared, blocked_extras): (Option<Prepared>, u64),
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let k = rlx_ir::ops::fused_conv::conv_arity(bias);
    if ins.len() < k {
        return Err(fail!(
            "fused conv takes x, w{} and extras, given {} inputs",
            if bias { ", bias" } else { "" },
            ins.len()
        ));
    }
    let (conv_ins, extras) = ins.split_at(k);
    let g = conv_geom(w, None, groups, conv_ins, out)?;
    if let Some(bad) = extras
        .iter()
        .find(|e| !ConvEpilogue::broadcasts(e.dims, out.dims))
    {
        return Err(fail!(
            "fused conv: extra input {:?} does not broadcast to the output {:?}",
            bad.dims,
            out.dims
        ));
    }
    // Half precision computes in a widened f32 copy: its epilogue runs after.
    let blockwise = matches!(out.dtype, DType::F32 | DType::F64);
    let epi = blockwise
        .then(|| ConvEpilogue::new(epilogue, extras, out.dims, out.dtype))
        .flatten();
    let epi = if blocked_extras == 0 {
        epi
    } else {
        let Some(e) = epi.and_then(|e| e.with_blocked_extras(blocked_extras)) else {
            return Err(fail!(
                "fused conv: blocked extra inputs (mask {blocked_extras:#b}) on an epilogue that cannot read them"
            ));
        };
        Some(e)
    };
    let Some(epi) = epi else {
        with_real!(conv_ins[0].dtype, conv_ins, &mut *out, |i, o| conv_real::<T>(&g, i, o, None, prepared); T)?;
        return super::region::epilogue(epilogue, extras, out);
    };
    with_real!(conv_ins[0].dtype, conv_ins, out, |i, o| conv_real::<T>(&g, i, o, Some(&epi), prepared); T)
}

/// Conv forced through Winograd F(2,3) (a 3x3 stride-1 2-D conv), for the
/// tests to check it on shapes conv itself leaves to im2col.
#[cfg(test)]
pub(crate) fn conv_winograd(
    w: &Window,
    groups: usize,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let g = conv_geom(w, None, groups, ins, out)?;
    let g2 = g.two_d.clone().filter(Conv2d::is_winograd_shape);
    let g2 = g2.expect("a 3x3 stride-1 2-D conv");
    with_real!(ins[0].dtype, ins, out, |i, o| {
        let y = o.slice::<T>();
        fill_bias(y, i.get(2).map(|b| b.slice::<T>()), g.o, g.pout);
        g2.winograd(i[0].slice::<T>(), i[1].slice::<T>(), y, None)
    }; T)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernels::scalar::Pod;
    use half::f16;

    fn bytes<T: Pod>(v: &[T]) -> &[u8] {
        // SAFETY: Pod has no padding.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }

    fn bytes_mut<T: Pod>(v: &mut [T]) -> &mut [u8] {
        // SAFETY: as above, and any bit pattern is a value.
        unsafe {
            std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v))
        }
    }

    /// Runs kernel `f` on inputs `(dims, data)` of dtype `dt` into an output of `out_dims`.
    pub(crate) fn run_as<T: Pod>(
        dt: DType,
        f: impl FnOnce(&[View], &mut ViewMut) -> KernelResult,
        ins: &[(&[usize], &[T])],
        out_dims: &[usize],
        fill: T,
    ) -> Result<Vec<T>, String> {
        let views: Vec<View> = ins
            .iter()
            .map(|&(dims, v)| View {
                dims,
                dtype: dt,
                bytes: bytes(v),
            })
            .collect();
        let mut y = vec![fill; out_dims.iter().product()];
        f(
            &views,
            &mut ViewMut {
                dims: out_dims,
                dtype: dt,
                bytes: bytes_mut(&mut y),
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(y)
    }

    pub(crate) type Ins<'a> = [(&'a [usize], &'a [f32])];

    pub(crate) fn run(
        f: impl FnOnce(&[View], &mut ViewMut) -> KernelResult,
        ins: &Ins,
        out_dims: &[usize],
    ) -> Result<Vec<f32>, String> {
        run_as(DType::F32, f, ins, out_dims, f32::NAN)
    }

    /// Compares with numpy values printed as `round(v, 7)`.
    pub(crate) fn close(got: &[f32], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let ok = (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()) || (g.is_nan() && w.is_nan());
            assert!(ok, "at {i}: {g} vs {w}\n{got:?}");
        }
    }

    /// `((i * a) % m - m // 2) / 4` for i in 0..n, the numpy tests' input.
    pub(crate) fn seq(n: usize, a: usize, m: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * a) % m) as f32 / 4.0 - (m / 2) as f32 / 4.0)
            .collect()
    }

    pub(crate) fn win(
        kernel: &[usize],
        stride: &[usize],
        padding: &[(usize, usize)],
        dilation: &[usize],
    ) -> Window {
        Window {
            kernel: kernel.to_vec(),
            stride: stride.to_vec(),
            padding: padding.to_vec(),
            dilation: dilation.to_vec(),
        }
    }

    // numpy reference (explicit loops); values printed as round(v, 7):
    //   seq = lambda n, a, m: ((np.arange(n) * a) % m - m // 2) / 4
    //   def conv(x, w, b, s, pad, dil, g):  # x [N,C,*sp], w [O,C/g,*k]
    //       sd = x.ndim - 2; N, C = x.shape[:2]; O = w.shape[0]; cg, og = C // g, O // g
    //       xp = np.pad(x, [(0, 0), (0, 0)] + list(pad))
    //       osp = [(xp.shape[2+i] - dil[i]*(w.shape[2+i]-1) - 1) // s[i] + 1 for i in range(sd)]
    //       y = np.zeros((N, O, *osp))
    //       for n, o in np.ndindex(N, O):
    //           for p in np.ndindex(*osp):
    //               acc = b[o]
    //               for c in range(cg):
    //                   for k in np.ndindex(*w.shape[2:]):
    //                       q = tuple(p[i]*s[i] + k[i]*dil[i] for i in range(sd))
    //                       acc += w[(o, c) + k] * xp[(n, o // og * cg + c) + q]
    //               y[(n, o) + p] = acc
    //       return y

    #[test]
    fn conv1d_stride_padding_bias() {
        // conv(seq(14,5,11).reshape(1,2,7), seq(18,7,13).reshape(3,2,3), seq(3,1,3), [2], [(1,2)], [1], 1)
        let want = [
            0.5625, 1.8125, 2.375, -0.5625, -0.3125, 2.625, 2.0625, 0.8125, 1.25, -3.0625, -2.3125,
            -0.25,
        ];
        let (x, w, b) = (seq(14, 5, 11), seq(18, 7, 13), seq(3, 1, 3));
        let win = win(&[], &[2], &[(1, 2)], &[1]);
        let ins: &Ins = &[(&[1, 2, 7], &x), (&[3, 2, 3], &w), (&[3], &b)];
        close(
            &run(|i, o| conv(&win, 1, i, o), ins, &[1, 3, 4]).unwrap(),
            &want,
        );
    }

    #[test]
    fn conv2d_groups_dilation() {
        // conv(seq(160,5,11).reshape(2,4,4,5), seq(48,7,13).reshape(4,2,3,2), seq(4,3,5),
        //      [2,1], [(1,1),(0,1)], [1,2], 2)
        let want = [
            -0.125, -0.25, -0.375, -0.875, 0.25, -1.125, 0.25, -1.875, -1.6875, 1.75, -2.375,
            1.375, 3.0625, -2.25, 3.4375, -1.125, 0.0, 0.125, 0.25, -2.875, -0.375, 4.0625,
            -0.4375, 2.375, 2.75, -2.5, 3.25, 2.375, -2.5625, 2.0625, -2.9375, 0.25, -0.5, -2.0,
            -0.75, -0.4375, -1.125, 0.25, -2.5, 2.5, 1.75, 0.375, 1.75, -0.4375, -2.5625, 3.8125,
            0.5625, -0.125, -1.0, 1.1875, -0.75, 0.0, 1.25, -1.875, 1.875, -2.5, 0.75, -0.375,
            1.25, -1.125, 3.75, 0.125, -0.0625, 1.8125,
        ];
        let (x, w, b) = (seq(160, 5, 11), seq(48, 7, 13), seq(4, 3, 5));
        let win = win(&[], &[2, 1], &[(1, 1), (0, 1)], &[1, 2]);
        let ins: &Ins = &[(&[2, 4, 4, 5], &x), (&[4, 2, 3, 2], &w), (&[4], &b)];
        close(
            &run(|i, o| conv(&win, 2, i, o), ins, &[2, 4, 2, 4]).unwrap(),
            &want,
        );
        // Without the bias every output moves by -bias[o].
        let y0 = run(|i, o| conv(&win, 2, i, o), &ins[..2], &[2, 4, 2, 4]).unwrap();
        let shifted: Vec<f64> = want
            .iter()
            .enumerate()
            .map(|(i, &v)| v - b[(i / 8) % 4] as f64)
            .collect();
        close(&y0, &shifted);
    }

    #[test]
    fn conv_f16_and_errors() {
        let (x, w) = (seq(14, 5, 11), seq(18, 7, 13));
        let win = win(&[], &[2], &[(1, 2)], &[1]);
        let ins: &Ins = &[(&[1, 2, 7], &x), (&[3, 2, 3], &w)];
        let want: Vec<f64> = run(|i, o| conv(&win, 1, i, o), ins, &[1, 3, 4])
            .unwrap()
            .iter()
            .map(|&v| v as f64)
            .collect();
        // Quarter-valued data: f16 (widened to f32) is exact here.
        let h = |v: &[f32]| v.iter().map(|&a| f16::from_f32(a)).collect::<Vec<_>>();
        let (xh, wh) = (h(&x), h(&w));
        let ins_h: &[(&[usize], &[f16])] = &[(&[1, 2, 7], &xh), (&[3, 2, 3], &wh)];
        let y = run_as(
            DType::F16,
            |i, o| conv(&win, 1, i, o),
            ins_h,
            &[1, 3, 4],
            f16::NAN,
        )
        .unwrap();
        close(&y.iter().map(|v| v.to_f32()).collect::<Vec<_>>(), &want);
        // Mismatched groups / output dims and integer dtypes are errors.
        assert!(run(|i, o| conv(&win, 2, i, o), ins, &[1, 3, 4]).is_err());
        assert!(run(|i, o| conv(&win, 1, i, o), ins, &[1, 3, 3]).is_err());
        assert!(run(|i, o| conv(&win, 1, i, o), &ins[..1], &[1, 3, 4]).is_err());
        let (xi, wi) = ([0i32; 14], [0i32; 18]);
        let ins_i: &[(&[usize], &[i32])] = &[(&[1, 2, 7], &xi), (&[3, 2, 3], &wi)];
        assert!(run_as(DType::I32, |i, o| conv(&win, 1, i, o), ins_i, &[1, 3, 4], 0).is_err());
    }
}
