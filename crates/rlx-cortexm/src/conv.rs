//! 2-d convolutions over NHWC int8 tensors (TFLite `Conv2D` /
//! `DepthwiseConv2D` with per-channel weights).

use crate::dense::check_bias;
use crate::error::{check_len, KernelError};
use crate::fixed::multiply_by_quantized_multiplier;
use crate::mac::{dot_offset, pack_pair, smlad};
use crate::qparams::{check_accumulator, ChannelQuant, QParams};

/// Window geometry of one NHWC convolution (or pooling) over one image.
/// Padded cells are skipped, which equals padding with the input zero point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dGeometry {
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Input channels.
    pub in_c: usize,
    /// Output channels (for depthwise: `in_c * depth_multiplier`).
    pub out_c: usize,
    /// Kernel height.
    pub k_h: usize,
    /// Kernel width.
    pub k_w: usize,
    /// Vertical stride.
    pub stride_h: usize,
    /// Horizontal stride.
    pub stride_w: usize,
    /// Rows of padding above.
    pub pad_top: usize,
    /// Rows of padding below.
    pub pad_bottom: usize,
    /// Columns of padding on the left.
    pub pad_left: usize,
    /// Columns of padding on the right.
    pub pad_right: usize,
}

impl Conv2dGeometry {
    /// Output height: `(in_h + pads - k_h) / stride_h + 1`.
    pub fn out_h(&self) -> usize {
        (self.in_h + self.pad_top + self.pad_bottom - self.k_h) / self.stride_h + 1
    }

    /// Output width: `(in_w + pads - k_w) / stride_w + 1`.
    pub fn out_w(&self) -> usize {
        (self.in_w + self.pad_left + self.pad_right - self.k_w) / self.stride_w + 1
    }

    /// Every size positive, the kernel no larger than the padded input and
    /// no window made only of padding.
    pub fn validate(&self) -> Result<(), KernelError> {
        let sizes = [
            self.in_h,
            self.in_w,
            self.in_c,
            self.out_c,
            self.k_h,
            self.k_w,
            self.stride_h,
            self.stride_w,
        ];
        if sizes.contains(&0) {
            return Err(KernelError::Geometry("a size or stride is zero"));
        }
        if self.k_h > self.in_h + self.pad_top + self.pad_bottom
            || self.k_w > self.in_w + self.pad_left + self.pad_right
        {
            return Err(KernelError::Geometry("kernel larger than the padded input"));
        }
        if self.pad_top >= self.k_h
            || self.pad_bottom >= self.k_h
            || self.pad_left >= self.k_w
            || self.pad_right >= self.k_w
        {
            return Err(KernelError::Geometry("padding as large as the kernel"));
        }
        Ok(())
    }

    /// Input elements per image.
    pub fn input_len(&self) -> usize {
        self.in_h * self.in_w * self.in_c
    }

    /// Output elements per image.
    pub fn output_len(&self) -> usize {
        self.out_h() * self.out_w() * self.out_c
    }

    /// The valid kernel rows `ky` (and the input row of the first) for output row `oy`.
    #[inline]
    pub(crate) fn rows(&self, oy: usize) -> (core::ops::Range<usize>, isize) {
        window(oy, self.stride_h, self.pad_top, self.k_h, self.in_h)
    }

    /// The valid kernel columns `kx` for output column `ox`.
    #[inline]
    pub(crate) fn cols(&self, ox: usize) -> (core::ops::Range<usize>, isize) {
        window(ox, self.stride_w, self.pad_left, self.k_w, self.in_w)
    }
}

/// Kernel taps of output position `o` that land inside `0..extent`, and the
/// input coordinate of tap 0 (may be negative).
#[inline]
fn window(
    o: usize,
    stride: usize,
    pad: usize,
    k: usize,
    extent: usize,
) -> (core::ops::Range<usize>, isize) {
    let origin = (o * stride) as isize - pad as isize;
    let start = (-origin).max(0) as usize;
    let end = (extent as isize - origin).clamp(0, k as isize) as usize;
    (start..end.max(start), origin)
}

fn check_common(
    g: &Conv2dGeometry,
    batch: usize,
    input: &[i8],
    bias: &[i32],
    q: &QParams,
    cq: &ChannelQuant<'_>,
    output: &[i8],
) -> Result<(), KernelError> {
    g.validate()?;
    q.validate()?;
    cq.validate(g.out_c)?;
    check_bias(bias, g.out_c)?;
    check_len("input", batch * g.input_len(), input.len())?;
    check_len("output", batch * g.output_len(), output.len())
}

/// Convolution of `batch` NHWC images; `weights` is `[out_c][k_h][k_w][in_c]`
/// (TFLite's OHWI).
#[allow(clippy::too_many_arguments)]
pub fn conv2d(
    input: &[i8],
    weights: &[i8],
    bias: &[i32],
    batch: usize,
    g: &Conv2dGeometry,
    q: &QParams,
    cq: &ChannelQuant<'_>,
    output: &mut [i8],
) -> Result<(), KernelError> {
    check_common(g, batch, input, bias, q, cq, output)?;
    check_len("weights", g.out_c * g.k_h * g.k_w * g.in_c, weights.len())?;
    check_accumulator(g.k_h * g.k_w * g.in_c)?;
    let offset = -q.input_zero_point;
    let (out_h, out_w) = (g.out_h(), g.out_w());
    let filter_len = g.k_h * g.k_w * g.in_c;
    for (image, out_image) in input
        .chunks_exact(g.input_len())
        .zip(output.chunks_exact_mut(g.output_len()))
    {
        for oy in 0..out_h {
            let (kys, iy0) = g.rows(oy);
            for ox in 0..out_w {
                let (kxs, ix0) = g.cols(ox);
                let pixel = &mut out_image[(oy * out_w + ox) * g.out_c..][..g.out_c];
                for (oc, out) in pixel.iter_mut().enumerate() {
                    let filter = &weights[oc * filter_len..][..filter_len];
                    let mut acc = bias[oc];
                    for ky in kys.clone() {
                        let iy = (iy0 + ky as isize) as usize;
                        // Taps of one kernel row are contiguous in NHWC and OHWI.
                        let x0 = (iy * g.in_w) as isize + ix0 + kxs.start as isize;
                        let x0 = x0 as usize * g.in_c;
                        let len = kxs.len() * g.in_c;
                        let w0 = (ky * g.k_w + kxs.start) * g.in_c;
                        acc = dot_offset(&image[x0..x0 + len], &filter[w0..w0 + len], offset, acc);
                    }
                    *out = q.finish(multiply_by_quantized_multiplier(
                        acc,
                        cq.multiplier[oc],
                        cq.shift[oc],
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Depthwise convolution of `batch` NHWC images: output channel
/// `c * depth_multiplier + m` filters input channel `c`; `weights` is
/// `[k_h][k_w][out_c]` (TFLite's `[1, KH, KW, C*M]`). Taps are paired
/// along the kernel for the dual MAC.
#[allow(clippy::too_many_arguments)]
pub fn depthwise_conv2d(
    input: &[i8],
    weights: &[i8],
    bias: &[i32],
    batch: usize,
    g: &Conv2dGeometry,
    depth_multiplier: usize,
    q: &QParams,
    cq: &ChannelQuant<'_>,
    output: &mut [i8],
) -> Result<(), KernelError> {
    check_common(g, batch, input, bias, q, cq, output)?;
    if depth_multiplier == 0 || g.out_c != g.in_c * depth_multiplier {
        return Err(KernelError::Geometry(
            "depthwise out_c must be in_c * depth_multiplier",
        ));
    }
    check_len("weights", g.k_h * g.k_w * g.out_c, weights.len())?;
    check_accumulator(g.k_h * g.k_w)?;
    let offset = -q.input_zero_point;
    let (out_h, out_w) = (g.out_h(), g.out_w());
    for (image, out_image) in input
        .chunks_exact(g.input_len())
        .zip(output.chunks_exact_mut(g.output_len()))
    {
        for oy in 0..out_h {
            let (kys, iy0) = g.rows(oy);
            for ox in 0..out_w {
                let (kxs, ix0) = g.cols(ox);
                for oc in 0..g.out_c {
                    let ic = oc / depth_multiplier;
                    let tap = |ky: usize, kx: usize| {
                        let iy = (iy0 + ky as isize) as usize;
                        let ix = (ix0 + kx as isize) as usize;
                        let x = image[(iy * g.in_w + ix) * g.in_c + ic] as i32 + offset;
                        (x as i16, weights[(ky * g.k_w + kx) * g.out_c + oc] as i16)
                    };
                    let mut acc = bias[oc];
                    let mut pending: Option<(i16, i16)> = None;
                    for ky in kys.clone() {
                        for kx in kxs.clone() {
                            let (x, w) = tap(ky, kx);
                            match pending.take() {
                                None => pending = Some((x, w)),
                                Some((px, pw)) => {
                                    acc = smlad(pack_pair(px, x), pack_pair(pw, w), acc)
                                }
                            }
                        }
                    }
                    if let Some((x, w)) = pending {
                        acc = acc.wrapping_add(x as i32 * w as i32);
                    }
                    out_image[(oy * out_w + ox) * g.out_c + oc] = q.finish(
                        multiply_by_quantized_multiplier(acc, cq.multiplier[oc], cq.shift[oc]),
                    );
                }
            }
        }
    }
    Ok(())
}
