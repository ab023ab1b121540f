//! The 16-lane depthwise 3x3 kernel's taps read straight from a blocked
//! image (`[H][W][16]` per channel group), with no padded copy.
//!
//! [`super::conv_depthwise_small`] used to copy a blocked image into its
//! zero-padded tile a band at a time; on MobileNetV2's 112 x 112 stride-2
//! depthwise that copy (a memmove of the whole 96-channel image) and the
//! zeroing of the 128 KiB tile were a fifth of the conv. Here an output
//! row's three input rows are read in place (a row in the vertical
//! padding reads a shared zero row), the interior columns (every tap
//! inside the row) run the small kernel's unrolled FMA chains, and the
//! few edge columns load a zero vector for each tap in the horizontal
//! padding. Every output is the same chain as through the tile (the bias,
//! then the nine taps in row-major kernel order, a padding tap adding
//! `w * 0`), so the bits are the tile path's.

use super::conv2d::Conv2d;
use super::conv_depthwise_small::{outputs, LANES, UNROLL};
use std::ops::Range;

impl Conv2d {
    /// Output rows `oys` of one 16-channel group into `yt` (`[pixels][16]`
    /// from the first row's first pixel), read from the group's blocked
    /// image `xg` (`[h][w][16]`); `zero` is a row of `w * 16` zeros that
    /// stands for the rows in the padding. The bias, then the nine taps in
    /// row-major kernel order, then `clamp`.
    ///
    /// # Safety
    /// AVX-512F and FMA present.
    #[target_feature(enable = "avx512f,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn taps_in_place(
        &self,
        xg: &[f32],
        zero: &[f32],
        wv: &[f32; 9 * LANES],
        bv: &[f32; LANES],
        clamp: Option<(f32, f32)>,
        yt: &mut [f32],
        oys: Range<usize>,
    ) {
        use std::arch::x86_64::*;
        let (s, ow, row) = (self.s.0, self.ow, self.w * LANES);
        assert!(xg.len() >= self.h * row && zero.len() >= row);
        assert!(yt.len() >= oys.len() * ow * LANES);
        // SAFETY (all loads / stores below): the rows are `row` floats
        // (an image row or `zero`), read at the columns checked here.
        let w: [__m512; 9] = std::array::from_fn(|t| unsafe { _mm512_loadu_ps(&wv[t * LANES]) });
        let b = unsafe { _mm512_loadu_ps(bv.as_ptr()) };
        let clamp = clamp.map(|(l, h)| (_mm512_set1_ps(l), _mm512_set1_ps(h)));
        // Interior outputs `inner`: the first tap column `ox * s - p` and
        // the last `ox * s - p + 2` inside the row.
        let first = self.p.1.div_ceil(s).min(ow);
        let last = (self.w + self.p.1).checked_sub(3).map_or(0, |r| r / s + 1);
        let inner = first..last.clamp(first, ow);
        let step = s * LANES;
        for (i, oy) in oys.enumerate() {
            let rows: [*const f32; 3] = std::array::from_fn(|ky| {
                let iy = (oy * s + ky).wrapping_sub(self.p.0);
                match iy < self.h {
                    true => unsafe { xg.as_ptr().add(iy * row) },
                    false => zero.as_ptr(),
                }
            });
            let out = unsafe { yt.as_mut_ptr().add(i * ow * LANES) };
            if !inner.is_empty() {
                let col = (inner.start * s - self.p.1) * LANES;
                let at = rows.map(|r| unsafe { r.add(col) });
                let out = unsafe { out.add(inner.start * LANES) };
                let mut ox = 0;
                while ox + UNROLL <= inner.len() {
                    unsafe { outputs::<UNROLL>(&at, ox, step, &w, b, clamp, out) };
                    ox += UNROLL;
                }
                for ox in ox..inner.len() {
                    unsafe { outputs::<1>(&at, ox, step, &w, b, clamp, out) };
                }
            }
            for ox in (0..inner.start).chain(inner.end..ow) {
                unsafe { self.edge_output(&rows, ox, &w, b, clamp, out.add(ox * LANES)) };
            }
        }
    }

    /// Output column `ox` of a row whose taps reach into the horizontal
    /// padding (`rows`: the three input rows, `w * 16` floats each): a
    /// zero vector for each tap there, the same chain as [`outputs`].
    ///
    /// # Safety
    /// AVX-512F and FMA present; `out` holds 16 floats.
    #[target_feature(enable = "avx512f,fma")]
    #[inline]
    unsafe fn edge_output(
        &self,
        rows: &[*const f32; 3],
        ox: usize,
        w: &[std::arch::x86_64::__m512; 9],
        b: std::arch::x86_64::__m512,
        clamp: Option<(std::arch::x86_64::__m512, std::arch::x86_64::__m512)>,
        out: *mut f32,
    ) {
        use super::conv_depthwise3x3::clamp16;
        use std::arch::x86_64::*;
        let mut acc = b;
        for (ky, &row) in rows.iter().enumerate() {
            for kx in 0..3 {
                let ix = (ox * self.s.0 + kx).wrapping_sub(self.p.1);
                let v = match ix < self.w {
                    // SAFETY: column `ix` of the row.
                    true => unsafe { _mm512_loadu_ps(row.add(ix * LANES)) },
                    false => _mm512_setzero_ps(),
                };
                acc = _mm512_fmadd_ps(w[3 * ky + kx], v, acc);
            }
        }
        let acc = match clamp {
            Some((lo, hi)) => unsafe { clamp16(acc, lo, hi) },
            None => acc,
        };
        // SAFETY: the caller's.
        unsafe { _mm512_storeu_ps(out, acc) };
    }
}
