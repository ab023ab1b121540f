//! Winograd F(2x2, 3x3) for dense / grouped 3x3 stride-1 undilated convs
//! over two spatial dims: each 2x2 output tile is computed from a 4x4 input
//! tile with 16 multiplies per (input, output) channel pair instead of 36,
//! so the products become 16 GEMMs of `[O, C] x [C, tiles]` (one per
//! position of the transformed tile) with 4/9 of the im2col GEMM's work.
//!
//! Transforms (Lavin & Gray 2016): the input tile `d` becomes `Bᵀ d B`, the
//! kernel `g` becomes `G g Gᵀ`, and the product `m` of the two, summed over
//! channels, becomes the output tile `Aᵀ m A`, with
//! `Bᵀ = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]]`,
//! `G = [[1,0,0],[½,½,½],[½,-½,½],[0,0,1]]`, `Aᵀ = [[1,1,1,0],[0,1,-1,-1]]`.
//! F(2,3)'s transforms only add, subtract and halve, so the result stays
//! within a few ulps of the direct sum (F(4,3) would cut the work further
//! but loses digits to its larger constants).

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::gemm::{num_threads, GemmFloat, Strided};
use super::KernelResult;
use crate::team;

/// Positions of a transformed tile.
const TILE: usize = 16;

impl Conv2d {
    /// True when the conv has the shape Winograd F(2,3) handles.
    pub(super) fn is_winograd_shape(&self) -> bool {
        self.kh == 3 && self.kw == 3 && self.s == (1, 1) && self.d == (1, 1)
    }

    /// True when Winograd beats im2col + GEMM: enough channels per group
    /// that the 16 GEMMs stay efficient, and enough tiles that the weight
    /// transform (per call) is small next to the products.
    pub(super) fn winograd_wins(&self, cg: usize, og: usize) -> bool {
        self.is_winograd_shape() && !self.is_depthwise() && cg >= 16 && og >= 16 && {
            let tiles = self.oh.div_ceil(2) * self.ow.div_ceil(2);
            tiles >= 64
        }
    }

    /// `y += conv(x, wt)` by Winograd F(2,3); `y` holds the bias (or zero)
    /// on entry. Needs [`Self::is_winograd_shape`].
    pub(super) fn winograd<T: GemmFloat>(
        &self,
        x: &[T],
        wt: &[T],
        y: &mut [T],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        debug_assert!(self.is_winograd_shape());
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        let (th, tw) = (self.oh.div_ceil(2), self.ow.div_ceil(2));
        let tiles = th * tw;
        if tiles == 0 || cg == 0 || og == 0 {
            return Ok(());
        }
        let u = transform_weights(wt, self.groups, og, cg);
        let mut v = vec![T::ZERO; cg * TILE * tiles];
        let mut m = vec![T::ZERO; TILE * og * tiles];
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        for n in 0..self.batch {
            for gi in 0..self.groups {
                let xg = &x[(n * self.c + gi * cg) * pin..][..cg * pin];
                self.transform_input(xg, cg, &mut v);
                let ug = &u[gi * TILE * og * cg..][..TILE * og * cg];
                for (xi, mx) in m.chunks_exact_mut(og * tiles).enumerate() {
                    // U[o, c] at position xi: ug[(xi * og + o) * cg + c].
                    let a = Strided::row_major(ug, xi * og * cg, og, cg);
                    // V[c, t] at position xi: v[(c * 16 + xi) * tiles + t].
                    let b = Strided {
                        data: &v,
                        offset: xi * tiles,
                        rows: cg,
                        cols: tiles,
                        row_stride: TILE * tiles,
                        col_stride: 1,
                    };
                    T::gemm(a, b, mx, num_threads());
                }
                let yg = &mut y[(n * self.o + gi * og) * pout..][..og * pout];
                self.transform_output(&m, og, tiles, yg, (n, gi * og), epi)?;
            }
        }
        Ok(())
    }

    /// `v[c, xi, t] = (Bᵀ d B)[xi]` for each channel `c` and tile `t` of
    /// the `cg` planes `xg` (zero outside the input), channels over the team.
    fn transform_input<T: GemmFloat>(&self, xg: &[T], cg: usize, v: &mut [T]) {
        let (th, tw) = (self.oh.div_ceil(2), self.ow.div_ceil(2));
        let tiles = th * tw;
        let pin = self.h * self.w;
        let ranges = team::split(cg, team::threads(), 1);
        let shared = team::Disjoint::new(v);
        team::parallel_for(ranges.len(), |part| {
            for c in ranges[part].clone() {
                let xc = &xg[c * pin..][..pin];
                // SAFETY: each channel belongs to exactly one part.
                let vc = unsafe { shared.range(c * TILE * tiles..(c + 1) * TILE * tiles) };
                for ty in 0..th {
                    for tx in 0..tw {
                        let d = self.input_tile(xc, ty, tx);
                        let t = ty * tw + tx;
                        for (xi, val) in input_transform(&d).into_iter().enumerate() {
                            vc[xi * tiles + t] = val;
                        }
                    }
                }
            }
        });
    }

    /// The 4x4 input tile under output tile `(ty, tx)`, zero in the padding.
    #[inline(always)]
    fn input_tile<T: GemmFloat>(&self, xc: &[T], ty: usize, tx: usize) -> [T; TILE] {
        let (y0, x0) = (
            2 * ty as isize - self.p.0 as isize,
            2 * tx as isize - self.p.1 as isize,
        );
        let (h, w) = (self.h as isize, self.w as isize);
        let mut d = [T::ZERO; TILE];
        if y0 >= 0 && x0 >= 0 && y0 + 4 <= h && x0 + 4 <= w {
            for (r, row) in d.chunks_exact_mut(4).enumerate() {
                let at = (y0 as usize + r) * self.w + x0 as usize;
                row.copy_from_slice(&xc[at..at + 4]);
            }
            return d;
        }
        for r in 0..4 {
            let iy = y0 + r as isize;
            if !(0..h).contains(&iy) {
                continue;
            }
            for col in 0..4 {
                let ix = x0 + col as isize;
                if (0..w).contains(&ix) {
                    d[r * 4 + col] = xc[iy as usize * self.w + ix as usize];
                }
            }
        }
        d
    }

    /// `yg[o] += Aᵀ m A` for each output channel `o` and tile (clipped to
    /// the output), output channels over the team. `m` is `[16, og, tiles]`.
    fn transform_output<T: GemmFloat>(
        &self,
        m: &[T],
        og: usize,
        tiles: usize,
        yg: &mut [T],
        (n, o0): (usize, usize),
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let tw = self.ow.div_ceil(2);
        let pout = self.oh * self.ow;
        let ranges = team::split(og, team::threads(), 1);
        let shared = team::Disjoint::new(yg);
        team::try_parallel_for(ranges.len(), |part| {
            for o in ranges[part].clone() {
                // SAFETY: each output channel belongs to exactly one part.
                let yo = unsafe { shared.range(o * pout..(o + 1) * pout) };
                for t in 0..tiles {
                    let mut mt = [T::ZERO; TILE];
                    for (xi, v) in mt.iter_mut().enumerate() {
                        *v = m[(xi * og + o) * tiles + t];
                    }
                    let out = output_transform(&mt);
                    let (oy, ox) = (2 * (t / tw), 2 * (t % tw));
                    for (r, row) in out.chunks_exact(2).enumerate().take(self.oh - oy) {
                        let yrow = &mut yo[(oy + r) * self.ow + ox..];
                        for (yv, &val) in yrow.iter_mut().zip(row).take(self.ow - ox) {
                            *yv = *yv + val;
                        }
                    }
                }
                if let Some(epi) = epi {
                    epi.apply(yo, n, o0 + o..o0 + o + 1)?;
                }
            }
            Ok(())
        })
    }
}

/// `Bᵀ d B` of a 4x4 tile (row-major).
#[inline(always)]
fn input_transform<T: GemmFloat>(d: &[T; TILE]) -> [T; TILE] {
    // Rows: t = Bᵀ d.
    let mut t = [T::ZERO; TILE];
    for col in 0..4 {
        let (d0, d1, d2, d3) = (d[col], d[4 + col], d[8 + col], d[12 + col]);
        t[col] = d0 - d2;
        t[4 + col] = d1 + d2;
        t[8 + col] = d2 - d1;
        t[12 + col] = d1 - d3;
    }
    // Columns: t B.
    let mut out = [T::ZERO; TILE];
    for r in 0..4 {
        let (t0, t1, t2, t3) = (t[4 * r], t[4 * r + 1], t[4 * r + 2], t[4 * r + 3]);
        out[4 * r] = t0 - t2;
        out[4 * r + 1] = t1 + t2;
        out[4 * r + 2] = t2 - t1;
        out[4 * r + 3] = t1 - t3;
    }
    out
}

/// `Aᵀ m A` of a 4x4 tile: the 2x2 output tile (row-major).
#[inline(always)]
fn output_transform<T: GemmFloat>(m: &[T; TILE]) -> [T; 4] {
    // Rows: s = Aᵀ m (2 x 4).
    let mut s = [T::ZERO; 8];
    for col in 0..4 {
        let (m0, m1, m2, m3) = (m[col], m[4 + col], m[8 + col], m[12 + col]);
        s[col] = m0 + m1 + m2;
        s[4 + col] = m1 - m2 - m3;
    }
    let mut out = [T::ZERO; 4];
    for r in 0..2 {
        let (s0, s1, s2, s3) = (s[4 * r], s[4 * r + 1], s[4 * r + 2], s[4 * r + 3]);
        out[2 * r] = s0 + s1 + s2;
        out[2 * r + 1] = s1 - s2 - s3;
    }
    out
}

/// `G g Gᵀ` of every `[3, 3]` kernel of `wt` (`[groups * og, cg, 3, 3]`):
/// the result is `[groups, 16, og, cg]`, so each group's product at one
/// tile position reads a dense `[og, cg]` matrix.
fn transform_weights<T: GemmFloat>(wt: &[T], groups: usize, og: usize, cg: usize) -> Vec<T> {
    let half = T::from_f64(0.5);
    let mut u = vec![T::ZERO; groups * TILE * og * cg];
    for (k, g) in wt.chunks_exact(9).enumerate().take(groups * og * cg) {
        let (o, c) = (k / cg, k % cg);
        let (gi, ol) = (o / og, o % og);
        let mut uk = [T::ZERO; TILE];
        // Rows: t = G g (4 x 3).
        let mut t = [T::ZERO; 12];
        for col in 0..3 {
            let (g0, g1, g2) = (g[col], g[3 + col], g[6 + col]);
            t[col] = g0;
            t[3 + col] = (g0 + g1 + g2) * half;
            t[6 + col] = (g0 - g1 + g2) * half;
            t[9 + col] = g2;
        }
        // Columns: t Gᵀ (4 x 4).
        for r in 0..4 {
            let (t0, t1, t2) = (t[3 * r], t[3 * r + 1], t[3 * r + 2]);
            uk[4 * r] = t0;
            uk[4 * r + 1] = (t0 + t1 + t2) * half;
            uk[4 * r + 2] = (t0 - t1 + t2) * half;
            uk[4 * r + 3] = t2;
        }
        for (xi, &val) in uk.iter().enumerate() {
            u[((gi * TILE + xi) * og + ol) * cg + c] = val;
        }
    }
    u
}

#[cfg(test)]
mod tests {
    use super::Conv2d;

    fn geom(c: usize, o: usize, groups: usize, hw: (usize, usize), k: usize, s: usize) -> Conv2d {
        Conv2d {
            batch: 1,
            c,
            o,
            groups,
            h: hw.0,
            w: hw.1,
            oh: hw.0,
            ow: hw.1,
            kh: k,
            kw: k,
            s: (s, s),
            d: (1, 1),
            p: (1, 1),
        }
    }

    /// conv picks Winograd for the fixture case that checks it through
    /// conv (`winograd_3x3_s1_picked_by_conv`) and for ResNet-style
    /// layers, and leaves small, strided, depthwise and 1x1 convs alone.
    #[test]
    fn winograd_is_picked_where_it_wins() {
        assert!(geom(16, 16, 1, (16, 17), 3, 1).winograd_wins(16, 16));
        assert!(geom(64, 64, 1, (56, 56), 3, 1).winograd_wins(64, 64));
        assert!(!geom(3, 4, 1, (7, 9), 3, 1).winograd_wins(3, 4));
        assert!(!geom(64, 64, 1, (56, 56), 3, 2).winograd_wins(64, 64));
        assert!(!geom(64, 64, 64, (56, 56), 3, 1).winograd_wins(1, 1));
        assert!(!geom(64, 64, 1, (56, 56), 1, 1).winograd_wins(64, 64));
        assert!(!geom(512, 512, 1, (7, 7), 3, 1).winograd_wins(512, 512));
    }
}
