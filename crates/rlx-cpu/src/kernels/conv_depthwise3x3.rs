//! Depthwise 3x3 conv (stride 1 or 2, undilated) on f32, the MobileNet
//! case: each input plane is copied once into a zero-padded plane (for
//! stride 2 split into its even and odd columns), so every one of the nine
//! taps of an output row is a contiguous run, and a row is one loop of nine
//! multiply-adds per output that the compiler vectorises (built once more
//! for AVX2 and picked at run time). The taps add in the order of the
//! generic kernel (bias, then row-major over the kernel), so both give the
//! same bits.

use super::conv2d::Conv2d;

impl Conv2d {
    /// True when [`Self::depthwise3x3_plane`] computes this conv.
    pub(super) fn is_depthwise3x3(&self) -> bool {
        self.kh == 3
            && self.kw == 3
            && self.d == (1, 1)
            && (self.s == (1, 1) || self.s == (2, 2))
            && self.is_depthwise()
    }

    /// One output plane `yp` from input plane `xp` and the 3x3 kernel `wk`;
    /// `scratch` is reused between calls.
    pub(super) fn depthwise3x3_plane(
        &self,
        xp: &[f32],
        wk: &[f32],
        bias: f32,
        yp: &mut [f32],
        scratch: &mut Vec<f32>,
    ) {
        let s = self.s.0;
        // Padded plane: rows / columns read by every output, zeros outside
        // x; for stride 2 stored as its even columns (taps 0 and 2), then
        // its odd ones (tap 1), each a contiguous run per output row.
        let (hp, wp) = ((self.oh - 1) * s + 3, (self.ow - 1) * s + 3);
        let (we, wo) = if s == 1 {
            (wp, 0)
        } else {
            (wp.div_ceil(2), wp / 2)
        };
        scratch.clear();
        scratch.resize(hp * (we + wo), 0.0);
        let (even, odd) = scratch.split_at_mut(hp * we);
        for r in 0..hp {
            let Some(iy) = (r as isize - self.p.0 as isize)
                .try_into()
                .ok()
                .filter(|&i: &usize| i < self.h)
            else {
                continue;
            };
            let c0 = self.p.1.min(wp);
            let n = self.w.min(wp - c0);
            let xrow = &xp[iy * self.w..][..n];
            if s == 1 {
                even[r * wp + c0..][..n].copy_from_slice(xrow);
                continue;
            }
            let (erow, orow) = (&mut even[r * we..][..we], &mut odd[r * wo..][..wo]);
            for (i, &v) in xrow.iter().enumerate() {
                let col = c0 + i;
                if col % 2 == 0 {
                    erow[col / 2] = v;
                } else {
                    orow[col / 2] = v;
                }
            }
        }
        let w: [f32; 9] = wk[..9].try_into().expect("a 3x3 kernel");
        let ow = self.ow;
        if s == 1 {
            let plane = &*even;
            for oy in 0..self.oh {
                let row = |ky: usize, kx: usize| &plane[(oy + ky) * wp + kx..][..ow];
                let taps = [
                    row(0, 0),
                    row(0, 1),
                    row(0, 2),
                    row(1, 0),
                    row(1, 1),
                    row(1, 2),
                    row(2, 0),
                    row(2, 1),
                    row(2, 2),
                ];
                taps_row(&mut yp[oy * ow..][..ow], &taps, &w, bias);
            }
            return;
        }
        let (even, odd) = (&*even, &*odd);
        for oy in 0..self.oh {
            let e = |ky: usize, off: usize| &even[(2 * oy + ky) * we + off..][..ow];
            let o = |ky: usize| &odd[(2 * oy + ky) * wo..][..ow];
            let taps = [
                e(0, 0),
                o(0),
                e(0, 1),
                e(1, 0),
                o(1),
                e(1, 1),
                e(2, 0),
                o(2),
                e(2, 1),
            ];
            taps_row(&mut yp[oy * ow..][..ow], &taps, &w, bias);
        }
    }
}

/// `y[i] = bias + sum_t w[t] * taps[t][i]` (taps in order).
fn taps_row(y: &mut [f32], taps: &[&[f32]; 9], w: &[f32; 9], bias: f32) {
    #[inline(always)]
    fn each(y: &mut [f32], taps: &[&[f32]; 9], w: &[f32; 9], bias: f32) {
        let n = y.len();
        let t: [&[f32]; 9] = std::array::from_fn(|k| &taps[k][..n]);
        for i in 0..n {
            let mut acc = bias;
            for k in 0..9 {
                acc += w[k] * t[k][i];
            }
            y[i] = acc;
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(y: &mut [f32], taps: &[&[f32]; 9], w: &[f32; 9], bias: f32) {
            each(y, taps, w, bias)
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { avx2(y, taps, w, bias) };
        }
    }
    each(y, taps, w, bias)
}
