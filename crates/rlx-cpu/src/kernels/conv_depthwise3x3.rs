//! Depthwise 3x3 conv (stride 1 or 2, undilated, any padding) on f32, the
//! MobileNet case, straight from the source plane: no padded copy. Each
//! output row splits into the interior columns, whose three taps per
//! kernel row all lie inside the input row, and the edge columns (at most
//! a few per side). The interior runs a vector of outputs at a time
//! (AVX-512: 16 lanes, stride 2 deinterleaved in registers; elsewhere a
//! loop the compiler vectorises, built for AVX2 + FMA where present); the
//! edges and kernel rows in the padding skip the taps outside the input.
//!
//! Every output is the same chain of fused multiply-adds: the bias, then
//! the taps inside the input in row-major kernel order, so a value does
//! not depend on its lane, its column or the ISA. A clamp epilogue
//! (ReLU6, [`super::conv_epilogue::RowChain::clamp`]) is applied before
//! the store, with the row chain's NaN and signed-zero rules.

use super::conv2d::Conv2d;
use super::scalar::{nan_max, nan_min};

/// `min(max(v, lo), hi)` folded into the store.
pub(super) type Clamp = (f32, f32);

/// What one output row reads: the kernel rows inside the input.
struct RowTaps<'a> {
    /// `(kernel row, its input row)`, in kernel order (1 to 3 of them).
    rows: [(usize, &'a [f32]); 3],
    live: usize,
}

/// The kernel of one plane: taps, bias and the clamp to store through.
struct Coef {
    w: [f32; 9],
    bias: f32,
    clamp: Option<Clamp>,
}

/// The plane geometry a row kernel needs.
#[derive(Clone, Copy)]
struct Geo {
    /// Output width, stride, left padding.
    ow: usize,
    s: usize,
    p: usize,
    /// Interior output columns: every tap of a kernel row is inside the row.
    inner: (usize, usize),
}

impl Conv2d {
    /// True when [`Self::depthwise3x3_plane`] computes this conv.
    pub(super) fn is_depthwise3x3(&self) -> bool {
        self.kh == 3
            && self.kw == 3
            && self.d == (1, 1)
            && (self.s == (1, 1) || self.s == (2, 2))
            && self.is_depthwise()
    }

    /// One output plane `yp` from input plane `xp` and the 3x3 kernel `wk`,
    /// then `clamp` on each output when given.
    pub(super) fn depthwise3x3_plane(
        &self,
        xp: &[f32],
        wk: &[f32],
        bias: f32,
        yp: &mut [f32],
        clamp: Option<Clamp>,
    ) {
        self.plane_by(xp, wk, bias, yp, clamp, true)
    }

    /// [`Self::depthwise3x3_plane`], on AVX-512 only when `wide` (and the
    /// CPU has it).
    fn plane_by(
        &self,
        xp: &[f32],
        wk: &[f32],
        bias: f32,
        yp: &mut [f32],
        clamp: Option<Clamp>,
        wide: bool,
    ) {
        let (s, p) = (self.s.0, self.p.1);
        // Interior: ox * s - p >= 0 and ox * s + 2 - p <= w - 1.
        let lo = p.div_ceil(s).min(self.ow);
        let hi = if self.w + p >= 3 {
            ((self.w + p - 3) / s + 1).min(self.ow)
        } else {
            0
        };
        let geo = Geo {
            ow: self.ow,
            s,
            p,
            inner: (lo, hi.max(lo)),
        };
        let k = Coef {
            w: wk[..9].try_into().expect("a 3x3 kernel"),
            bias,
            clamp,
        };
        #[cfg(target_arch = "x86_64")]
        if wide && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (and so FMA).
            return unsafe { self.plane_avx512(&geo, &k, xp, yp) };
        }
        let _ = wide;
        self.each_row(xp, yp, |t, y| row_narrow(&geo, t, &k, y));
    }

    /// The rows of an AVX-512 plane, in one function built for it (the
    /// weights broadcast once per plane).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn plane_avx512(&self, geo: &Geo, k: &Coef, xp: &[f32], yp: &mut [f32]) {
        self.each_row(xp, yp, |t, y| {
            // SAFETY: this function runs only where the CPU has AVX-512F.
            unsafe { row_avx512(geo, t, k, y) }
        });
    }

    /// Calls `f` with the kernel rows inside the input and the output row,
    /// for each output row of the plane.
    #[inline(always)]
    fn each_row(&self, xp: &[f32], yp: &mut [f32], mut f: impl FnMut(&RowTaps, &mut [f32])) {
        let (s, ph, h) = (self.s.0, self.p.0, self.h);
        for (oy, yrow) in yp.chunks_exact_mut(self.ow).take(self.oh).enumerate() {
            let mut taps = RowTaps {
                rows: [(0, &[][..]); 3],
                live: 0,
            };
            for ky in 0..3 {
                let Some(iy) = (oy * s + ky).checked_sub(ph).filter(|&i| i < h) else {
                    continue;
                };
                taps.rows[taps.live] = (ky, &xp[iy * self.w..][..self.w]);
                taps.live += 1;
            }
            f(&taps, yrow);
        }
    }
}

/// One output row without AVX-512: AVX2 + FMA where the CPU has them.
fn row_narrow(g: &Geo, t: &RowTaps, k: &Coef, y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { row_avx2(g, t, k, y) };
    }
    row_portable(g, t, k, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn row_avx2(g: &Geo, t: &RowTaps, k: &Coef, y: &mut [f32]) {
    row_portable(g, t, k, y)
}

/// The interior one kernel row at a time over the output row (a loop the
/// compiler vectorises), then the edges.
#[inline(always)]
fn row_portable(g: &Geo, t: &RowTaps, k: &Coef, y: &mut [f32]) {
    let (w, bias, clamp) = (&k.w, k.bias, k.clamp);
    let (lo, hi) = g.inner;
    let yi = &mut y[lo..hi];
    yi.fill(bias);
    let n = yi.len();
    for &(ky, xr) in &t.rows[..t.live] {
        let (w0, w1, w2) = (w[3 * ky], w[3 * ky + 1], w[3 * ky + 2]);
        if n == 0 {
            break;
        }
        let x0 = &xr[lo * g.s - g.p..];
        if g.s == 1 {
            let (a, b, c) = (&x0[..n], &x0[1..n + 1], &x0[2..n + 2]);
            for i in 0..n {
                yi[i] = w2.mul_add(c[i], w1.mul_add(b[i], w0.mul_add(a[i], yi[i])));
            }
        } else {
            let x0 = &x0[..2 * n + 1];
            for (i, v) in yi.iter_mut().enumerate() {
                let q = 2 * i;
                *v = w2.mul_add(x0[q + 2], w1.mul_add(x0[q + 1], w0.mul_add(x0[q], *v)));
            }
        }
    }
    if let Some((l, h)) = clamp {
        for v in yi.iter_mut() {
            *v = nan_min(nan_max(*v, l), h);
        }
    }
    edge(g, t, k, y);
}

/// The columns outside the interior, one at a time, each tap checked.
#[inline(always)]
fn edge(g: &Geo, t: &RowTaps, k: &Coef, y: &mut [f32]) {
    let (w, bias, clamp) = (&k.w, k.bias, k.clamp);
    let (lo, hi) = g.inner;
    for ox in (0..lo).chain(hi..g.ow) {
        let mut acc = bias;
        for &(ky, xr) in &t.rows[..t.live] {
            for kx in 0..3 {
                if let Some(&v) = (ox * g.s + kx).checked_sub(g.p).and_then(|i| xr.get(i)) {
                    acc = w[3 * ky + kx].mul_add(v, acc);
                }
            }
        }
        y[ox] = clamp.map_or(acc, |(l, h)| nan_min(nan_max(acc, l), h));
    }
}

/// The interior 16 outputs at a time in registers, all kernel rows per
/// vector; stride 2 loads 32 + 2 consecutive inputs and splits them into
/// even and odd lanes. The last partial vector uses masked loads / store.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[inline]
unsafe fn row_avx512(g: &Geo, t: &RowTaps, k: &Coef, y: &mut [f32]) {
    let (w, bias, clamp) = (&k.w, k.bias, k.clamp);
    use std::arch::x86_64::*;
    let (lo, hi) = g.inner;
    let wv: [__m512; 9] = std::array::from_fn(|k| _mm512_set1_ps(w[k]));
    let vb = _mm512_set1_ps(bias);
    let (vlo, vhi) = clamp.map_or((vb, vb), |(l, h)| (_mm512_set1_ps(l), _mm512_set1_ps(h)));
    // Lane i of `even` / `odd`: element 2i / 2i + 1 of the 32 in (a, b).
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    // The first `avail` floats at `p` (all 16 when that many are readable).
    macro_rules! load {
        ($p:expr, $avail:expr) => {{
            let (p, avail): (*const f32, usize) = ($p, $avail);
            if avail >= 16 {
                _mm512_loadu_ps(p)
            } else {
                _mm512_maskz_loadu_ps(((1u32 << avail) - 1) as u16, p)
            }
        }};
    }
    let mut ox = lo;
    if t.live == 3 {
        // All three kernel rows inside: full vectors without masks or
        // per-row loops (the interior guarantees 16 + 2 inputs at stride 1,
        // 32 + 1 at stride 2: the last load takes 15 lanes).
        let r: [*const f32; 3] = std::array::from_fn(|i| t.rows[i].1.as_ptr());
        while ox + 16 <= hi {
            let start = ox * g.s - g.p;
            let mut acc = vb;
            for (ky, &row) in r.iter().enumerate() {
                let at = row.add(start);
                let kk = 3 * ky;
                if g.s == 1 {
                    acc = _mm512_fmadd_ps(wv[kk], _mm512_loadu_ps(at), acc);
                    acc = _mm512_fmadd_ps(wv[kk + 1], _mm512_loadu_ps(at.add(1)), acc);
                    acc = _mm512_fmadd_ps(wv[kk + 2], _mm512_loadu_ps(at.add(2)), acc);
                } else {
                    let a = _mm512_loadu_ps(at);
                    let b = _mm512_loadu_ps(at.add(16));
                    let c = _mm512_loadu_ps(at.add(2));
                    let d = _mm512_maskz_loadu_ps(0x7fff, at.add(18));
                    acc = _mm512_fmadd_ps(wv[kk], _mm512_permutex2var_ps(a, even, b), acc);
                    acc = _mm512_fmadd_ps(wv[kk + 1], _mm512_permutex2var_ps(a, odd, b), acc);
                    acc = _mm512_fmadd_ps(wv[kk + 2], _mm512_permutex2var_ps(c, even, d), acc);
                }
            }
            if clamp.is_some() {
                acc = clamp16(acc, vlo, vhi);
            }
            _mm512_storeu_ps(y.as_mut_ptr().add(ox), acc);
            ox += 16;
        }
    }
    while ox < hi {
        let n = (hi - ox).min(16);
        let mut acc = vb;
        for &(ky, xr) in &t.rows[..t.live] {
            let start = ox * g.s - g.p;
            // Readable inputs from `start` (the row's end bounds the loads).
            let avail = xr.len() - start;
            let at = xr.as_ptr().add(start);
            let k = 3 * ky;
            if g.s == 1 {
                // Lanes past the interior read valid inputs; the store drops them.
                let a = load!(at, avail);
                let b = load!(at.add(1), avail - 1);
                let c = load!(at.add(2), avail - 2);
                acc = _mm512_fmadd_ps(wv[k], a, acc);
                acc = _mm512_fmadd_ps(wv[k + 1], b, acc);
                acc = _mm512_fmadd_ps(wv[k + 2], c, acc);
            } else {
                // Output lane i reads inputs 2i .. 2i + 2 from `at`.
                let zero = _mm512_setzero_ps();
                let a = load!(at, avail);
                let b = if avail > 16 {
                    load!(at.add(16), avail - 16)
                } else {
                    zero
                };
                let c = load!(at.add(2), avail - 2);
                let d = if avail > 18 {
                    load!(at.add(18), avail - 18)
                } else {
                    zero
                };
                acc = _mm512_fmadd_ps(wv[k], _mm512_permutex2var_ps(a, even, b), acc);
                acc = _mm512_fmadd_ps(wv[k + 1], _mm512_permutex2var_ps(a, odd, b), acc);
                acc = _mm512_fmadd_ps(wv[k + 2], _mm512_permutex2var_ps(c, even, d), acc);
            }
        }
        if clamp.is_some() {
            acc = clamp16(acc, vlo, vhi);
        }
        let out = y.as_mut_ptr().add(ox);
        if n == 16 {
            _mm512_storeu_ps(out, acc);
        } else {
            _mm512_mask_storeu_ps(out, ((1u32 << n) - 1) as u16, acc);
        }
        ox += n;
    }
    edge(g, t, k, y);
}

/// `nan_min(nan_max(v, lo), hi)` per lane: `max(lo, v)` / `min(hi, v)`
/// keep `v` on ties (signed zeros included) and on NaN, which is then
/// made the canonical NaN, as the scalar functions return.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub(super) unsafe fn clamp16(
    v: std::arch::x86_64::__m512,
    lo: std::arch::x86_64::__m512,
    hi: std::arch::x86_64::__m512,
) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    let is_nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    let r = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
    _mm512_mask_mov_ps(r, is_nan, _mm512_set1_ps(f32::NAN))
}

#[cfg(test)]
mod tests {
    use super::Conv2d;
    use crate::kernels::conv::fused_conv;
    use crate::kernels::conv_epilogue::tests::{
        check_fused_bits, check_fused_conv_fixture, dims, epilogue, seq,
    };
    use crate::kernels::conv_epilogue::ConvEpilogue;
    use crate::kernels::conv_packed::geometry;
    use crate::kernels::View;
    use rlx_ir::op::{BinaryOp, ChainOperand, ChainStep, Window};
    use rlx_ir::DType;
    use serde_json::Value;

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_depthwise/cases.json");

    /// Every case of tools/gen_fused_conv_fixtures.py's DEPTHWISE_CASES
    /// (numpy float64 loops) through the fused conv at 1, 2 and 3 threads:
    /// full and partial vectors, stride 2 on odd / even widths, no / past
    /// the kernel / asymmetric padding, a plane narrower than the kernel,
    /// a channel multiplier; ReLU6 clamped in the kernel, the other
    /// epilogues per plane or per block.
    #[test]
    fn depthwise_convs_match_numpy() {
        check_fused_conv_fixture(FIXTURE, 25, &fused_conv);
    }

    /// Each case is one this kernel takes, and fused gives unfused's bits
    /// (also with NaN and -0 inputs through the in-register clamp).
    #[test]
    fn fused_depthwise_is_bit_exact_to_conv_then_epilogue() {
        check_fused_bits(FIXTURE, Conv2d::is_depthwise3x3);
    }

    /// The rows without AVX-512 (AVX2 or portable) give the AVX-512
    /// rows' bits on every case (with and without the clamp), so the
    /// numpy check above covers them on an AVX-512 host too.
    #[test]
    fn narrow_rows_give_the_same_bits() {
        let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture JSON");
        for case in fixture["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let (xd, wd, yd) = (dims(&case["x"]), dims(&case["w"]), dims(&case["y_dims"]));
            let pads = case["pads"].as_array().expect("pads");
            let window = Window {
                kernel: vec![],
                stride: dims(&case["stride"]),
                padding: pads.iter().map(|p| (dims(p)[0], dims(p)[1])).collect(),
                dilation: dims(&case["dilation"]),
            };
            let g2 = geometry(&window, xd[1], &xd, &wd, &yd).expect("2-D");
            let mut x = seq(xd[2] * xd[3], 7, 23, 8.0);
            x[0] = f32::NAN;
            let w = seq(9, 5, 17, 16.0);
            for clamp in [None, Some((0.0, 6.0)), Some((-0.5, 0.25))] {
                let mut wide = vec![f32::NAN; yd[2] * yd[3]];
                let mut narrow = wide.clone();
                g2.depthwise3x3_plane(&x, &w, 0.375, &mut wide, clamp);
                g2.plane_by(&x, &w, 0.375, &mut narrow, clamp, false);
                let same = wide
                    .iter()
                    .zip(&narrow)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{name} (clamp {clamp:?}): {wide:?} vs {narrow:?}");
            }
        }
    }

    /// ReLU6 (Clip's max then min with scalars) is a clamp the kernel folds
    /// in; ReLU, a per-channel bound or the reverse order are not.
    #[test]
    fn only_scalar_max_then_min_is_a_clamp() {
        let out = [1, 3, 4, 4];
        let clamp_of = |steps: &[ChainStep], extras: &[(Vec<usize>, Vec<f32>)]| {
            let views: Vec<View> = extras
                .iter()
                .map(|(d, v)| View {
                    dims: d,
                    dtype: DType::F32,
                    // SAFETY: f32 has no padding.
                    bytes: unsafe {
                        std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4)
                    },
                })
                .collect();
            let epi = ConvEpilogue::new(steps, &views, &out, DType::F32).expect("broadcasts");
            epi.rows().and_then(|r| r.clamp())
        };
        let (steps, extras) = epilogue("relu6", 3, 4, &out);
        assert_eq!(clamp_of(&steps, &extras), Some((0.0, 6.0)));
        let (steps, extras) = epilogue("relu", 3, 4, &out);
        assert_eq!(clamp_of(&steps, &extras), None);
        let (i, s) = (ChainOperand::Input, ChainOperand::Step);
        let scalar = |v: f32| (vec![1], vec![v]);
        let max_only = [ChainStep::Binary(BinaryOp::Max, i(0), i(1))];
        assert_eq!(
            clamp_of(&max_only, &[scalar(0.0)]),
            Some((0.0, f32::INFINITY))
        );
        let min_then_max = [
            ChainStep::Binary(BinaryOp::Min, i(0), i(1)),
            ChainStep::Binary(BinaryOp::Max, s(0), i(2)),
        ];
        assert_eq!(clamp_of(&min_then_max, &[scalar(6.0), scalar(0.0)]), None);
        let per_channel = (vec![3, 1, 1], vec![0.0, 1.0, 2.0]);
        let relu6_channel = [
            ChainStep::Binary(BinaryOp::Max, i(0), i(1)),
            ChainStep::Binary(BinaryOp::Min, s(0), i(2)),
        ];
        assert_eq!(clamp_of(&relu6_channel, &[per_channel, scalar(6.0)]), None);
        assert_eq!(clamp_of(&max_only, &[scalar(f32::NAN)]), None);
    }
}
