//! Fast paths of conv over two spatial dims (`[N, C, H, W]`), the CNN case:
//! a direct depthwise kernel (one input channel per group), and an im2col
//! that copies whole rows (or, for a 1x1 stride-1 unpadded conv, none: the
//! input already is the column matrix). Row ranges replace the per-element
//! padding test of the N-d tap table.

use super::conv_epilogue::ConvEpilogue;
use super::scalar::Real;
use super::KernelResult;
use crate::team;
use std::any::TypeId;
use std::ops::Range;

/// Checked geometry of a 2-D conv (see `conv::conv_geom`).
#[derive(Clone, Debug)]
pub(super) struct Conv2d {
    pub batch: usize,
    pub c: usize,
    pub o: usize,
    pub groups: usize,
    /// Input height, width.
    pub h: usize,
    pub w: usize,
    /// Output height, width.
    pub oh: usize,
    pub ow: usize,
    /// Kernel height, width.
    pub kh: usize,
    pub kw: usize,
    /// Strides, dilations and leading paddings (height, width).
    pub s: (usize, usize),
    pub d: (usize, usize),
    pub p: (usize, usize),
}

/// Output positions `o < out` whose input position `o * s + k * d - p`
/// lies in `0..len`.
fn valid(out: usize, len: usize, k: usize, (s, d, p): (usize, usize, usize)) -> Range<usize> {
    let off = k * d;
    let lo = if off >= p { 0 } else { (p - off).div_ceil(s) };
    let hi = if len + p > off {
        ((len - 1 + p - off) / s + 1).min(out)
    } else {
        0
    };
    lo.min(hi)..hi
}

impl Conv2d {
    /// Output rows that kernel row `ky` reads inside the input.
    fn rows(&self, ky: usize) -> Range<usize> {
        valid(self.oh, self.h, ky, (self.s.0, self.d.0, self.p.0))
    }

    /// Output columns that kernel column `kx` reads inside the input.
    fn cols(&self, kx: usize) -> Range<usize> {
        valid(self.ow, self.w, kx, (self.s.1, self.d.1, self.p.1))
    }

    /// Input row read by output row `oy` at kernel row `ky` (in [`Self::rows`]).
    fn in_row(&self, oy: usize, ky: usize) -> usize {
        oy * self.s.0 + ky * self.d.0 - self.p.0
    }

    /// True when the column matrix is the input itself.
    pub(super) fn is_pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.s == (1, 1) && self.p == (0, 0)
    }

    /// True when each group reads one input channel (depthwise, possibly
    /// with a channel multiplier).
    pub(super) fn is_depthwise(&self) -> bool {
        self.groups == self.c && self.groups > 1
    }

    /// Adds `wv * x[row, o * s + off - p]` to `y[o]` over the columns `cols`.
    #[inline(always)]
    fn tap_row<T: Real>(&self, y: &mut [T], xrow: &[T], wv: T, kx: usize, cols: Range<usize>) {
        let off = kx * self.d.1;
        if self.s.1 == 1 {
            let start = cols.start + off - self.p.1;
            let n = cols.len();
            for (yv, &xv) in y[cols].iter_mut().zip(&xrow[start..start + n]) {
                *yv = *yv + wv * xv;
            }
        } else {
            for ox in cols {
                y[ox] = y[ox] + wv * xrow[ox * self.s.1 + off - self.p.1];
            }
        }
    }

    /// Depthwise conv: each output plane from its one input plane, planes
    /// split over the team; `epi` runs on blocks of planes of one image as
    /// they are done. `y` starts as the bias (or zero).
    pub(super) fn depthwise<T: Real>(
        &self,
        x: &[T],
        wt: &[T],
        bias: Option<&[T]>,
        y: &mut [T],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let pout = self.oh * self.ow;
        let planes = self.batch * self.o;
        if pout == 0 || planes == 0 {
            return Ok(());
        }
        let ranges = team::split(planes, team::threads(), 1);
        let shared = team::Disjoint::new(y);
        // Planes per epilogue block: about 16 KiB of output, one image.
        let block = (4096 / pout).max(1);
        // Set only for an f32 output (then `T` is f32).
        let chain = epi.and_then(|e| e.rows());
        // A clamp the 3x3 kernel applies in registers instead.
        let clamp = chain
            .and_then(|c| c.clamp())
            .filter(|_| self.is_depthwise3x3());
        team::try_parallel_for(ranges.len(), |part| {
            let mut start = ranges[part].start;
            while start < ranges[part].end {
                let (n, oc) = (start / self.o, start % self.o);
                let end = ranges[part].end.min(start + block).min((n + 1) * self.o);
                // SAFETY: each plane belongs to exactly one part.
                let yb = unsafe { shared.range(start * pout..end * pout) };
                for (i, yp) in yb.chunks_exact_mut(pout).enumerate() {
                    self.depthwise_plane(x, wt, bias, (n, oc + i), yp, clamp);
                    // A row-chain epilogue while the plane is in L1.
                    if let (Some(chain), Some(y32), None) = (chain, as_f32_mut(yp), clamp) {
                        chain.apply(y32, pout, n, oc + i..oc + i + 1, 0..pout);
                    }
                }
                if let Some(epi) = epi.filter(|_| chain.is_none()) {
                    epi.apply(yb, n, oc..oc + (end - start))?;
                }
                start = end;
            }
            Ok(())
        })
    }

    /// One output plane `(n, oc)` of a depthwise conv (`clamp`: applied
    /// by the 3x3 f32 kernel, which then takes the plane).
    fn depthwise_plane<T: Real>(
        &self,
        x: &[T],
        wt: &[T],
        bias: Option<&[T]>,
        (n, oc): (usize, usize),
        yp: &mut [T],
        clamp: Option<(f32, f32)>,
    ) {
        let (pin, kn) = (self.h * self.w, self.kh * self.kw);
        let og = self.o / self.groups;
        let xp = &x[(n * self.c + oc / og) * pin..][..pin];
        let wk = &wt[oc * kn..][..kn];
        let b = bias.map_or(T::ZERO, |b| b[oc]);
        if self.is_depthwise3x3() {
            if let (Some(xp), Some(wk), Some(b)) = (as_f32(xp), as_f32(wk), as_f32(&[b])) {
                let yp = as_f32_mut(yp).expect("y has x's type");
                return self.depthwise3x3_plane(xp, wk, b[0], yp, clamp);
            }
        }
        yp.fill(b);
        for oy in 0..self.oh {
            let yrow = &mut yp[oy * self.ow..][..self.ow];
            for ky in 0..self.kh {
                if !self.rows(ky).contains(&oy) {
                    continue;
                }
                let xrow = &xp[self.in_row(oy, ky) * self.w..][..self.w];
                for kx in 0..self.kw {
                    self.tap_row(yrow, xrow, wk[ky * self.kw + kx], kx, self.cols(kx));
                }
            }
        }
    }

    /// Fills `col` (`[cg * kh * kw, oys.len() * ow]`) with the taps of the
    /// `cg` input planes `xg` at the output rows `oys`: row `(c, ky, kx)`
    /// holds the input under that tap at each of those output positions,
    /// zero in the padding.
    pub(super) fn im2col_rows<T: Real>(
        &self,
        xg: &[T],
        cg: usize,
        oys: Range<usize>,
        col: &mut [T],
    ) {
        let pin = self.h * self.w;
        let mut rows = col.chunks_exact_mut(oys.len() * self.ow);
        for c in 0..cg {
            let xc = &xg[c * pin..][..pin];
            for ky in 0..self.kh {
                let valid_rows = self.rows(ky);
                for kx in 0..self.kw {
                    let Some(dst) = rows.next() else { return };
                    let cols = self.cols(kx);
                    for (oy, drow) in oys.clone().zip(dst.chunks_exact_mut(self.ow)) {
                        if !valid_rows.contains(&oy) {
                            drow.fill(T::ZERO);
                            continue;
                        }
                        let xrow = &xc[self.in_row(oy, ky) * self.w..][..self.w];
                        drow[..cols.start].fill(T::ZERO);
                        drow[cols.end..].fill(T::ZERO);
                        let off = kx * self.d.1;
                        if self.s.1 == 1 {
                            let start = cols.start + off - self.p.1;
                            drow[cols.clone()].copy_from_slice(&xrow[start..start + cols.len()]);
                        } else if self.s.1 == 2 && !cols.is_empty() {
                            // Pairs of a constant stride vectorise (two-way
                            // interleaved loads); the indexed loop below
                            // was most of ResNet-18's 1x1 stride-2 convs.
                            let start = cols.start * 2 + off - self.p.1;
                            let pairs = ((xrow.len() - start) / 2).min(cols.len());
                            let dst = &mut drow[cols.clone()];
                            let (head, tail) = dst.split_at_mut(pairs);
                            for (d, pair) in head.iter_mut().zip(xrow[start..].chunks_exact(2)) {
                                *d = pair[0];
                            }
                            if let Some(d) = tail.first_mut() {
                                *d = xrow[start + 2 * pairs];
                            }
                        } else {
                            for ox in cols.clone() {
                                drow[ox] = xrow[ox * self.s.1 + off - self.p.1];
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `v` as f32s, when `T` is f32.
pub(super) fn as_f32<T: Real>(v: &[T]) -> Option<&[f32]> {
    (TypeId::of::<T>() == TypeId::of::<f32>())
        // SAFETY: `T` is f32.
        .then(|| unsafe { std::slice::from_raw_parts(v.as_ptr() as *const f32, v.len()) })
}

/// `v` as f32s, when `T` is f32.
pub(super) fn as_f32_mut<T: Real>(v: &mut [T]) -> Option<&mut [f32]> {
    (TypeId::of::<T>() == TypeId::of::<f32>())
        // SAFETY: `T` is f32.
        .then(|| unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut f32, v.len()) })
}

#[cfg(test)]
mod tests {
    use super::valid;
    use crate::kernels::conv::{conv, conv_packed_weights, conv_winograd, tests::run_as};
    use crate::kernels::conv_packed::packed_copy;
    use crate::kernels::gemm_packed::panel_width;
    use crate::kernels::{View, ViewMut};
    use rlx_ir::op::Window;
    use rlx_ir::DType;
    use rlx_ir::Op;
    use serde_json::Value;

    fn seq(n: usize, a: usize, m: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * a) % m) as f32 - (m / 2) as f32) / scale)
            .collect()
    }

    fn dims(v: &Value) -> Vec<usize> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|d| d.as_u64().expect("a dim") as usize)
            .collect()
    }

    /// One case of tools/gen_conv2d_fixtures.py with its inputs built.
    struct Case {
        name: String,
        dims: [Vec<usize>; 3],
        window: Window,
        groups: usize,
        x: Vec<f32>,
        w: Vec<f32>,
        bias: Option<Vec<f32>>,
        want: Vec<f64>,
    }

    fn cases() -> Vec<Case> {
        let text = include_str!("../../tests/fixtures/conv2d/cases.json");
        let fixture: Value = serde_json::from_str(text).expect("fixture JSON");
        let cases = fixture["cases"].as_array().expect("cases");
        cases
            .iter()
            .map(|case| {
                let (xd, wd, yd) = (dims(&case["x"]), dims(&case["w"]), dims(&case["y_dims"]));
                let pads = case["pads"].as_array().expect("pads");
                let window = Window {
                    kernel: vec![],
                    stride: dims(&case["stride"]),
                    padding: pads
                        .iter()
                        .map(|p| {
                            let p = dims(p);
                            (p[0], p[1])
                        })
                        .collect(),
                    dilation: dims(&case["dilation"]),
                };
                let bias = case["bias"]
                    .as_bool()
                    .expect("bias")
                    .then(|| (0..wd[0]).map(|i| ((i % 5) as f32 - 2.0) / 4.0).collect());
                Case {
                    name: case["name"].as_str().expect("name").to_string(),
                    x: seq(xd.iter().product(), 7, 23, 8.0),
                    w: seq(wd.iter().product(), 5, 17, 16.0),
                    dims: [xd, wd, yd],
                    window,
                    groups: case["groups"].as_u64().expect("groups") as usize,
                    bias,
                    want: case["y"]
                        .as_array()
                        .expect("y")
                        .iter()
                        .map(|v| v.as_f64().expect("a number"))
                        .collect(),
                }
            })
            .collect()
    }

    /// Runs `case` through `kernel` and compares with numpy's result.
    fn check(case: &Case, kernel: KernelFn) {
        check_with(case, kernel)
    }

    /// [`check`] with any kernel closure.
    fn check_with(
        case: &Case,
        kernel: impl Fn(&Window, usize, &[View], &mut ViewMut) -> crate::kernels::KernelResult,
    ) {
        let [xd, wd, yd] = &case.dims;
        let bd = [wd[0]];
        let mut ins: Vec<(&[usize], &[f32])> = vec![(xd, &case.x), (wd, &case.w)];
        if let Some(b) = &case.bias {
            ins.push((&bd, b));
        }
        let name = &case.name;
        let got = run_as(
            DType::F32,
            |i, o| kernel(&case.window, case.groups, i, o),
            &ins,
            yd,
            f32::NAN,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got.len(), case.want.len(), "{name}");
        for (i, (&g, &w)) in got.iter().zip(&case.want).enumerate() {
            assert!(
                (f64::from(g) - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{name}: element {i}: {g} vs numpy {w}"
            );
        }
    }

    type KernelFn = fn(&Window, usize, &[View], &mut ViewMut) -> crate::kernels::KernelResult;

    /// Every case of tools/gen_conv2d_fixtures.py (numpy, float64 loops):
    /// depthwise with multipliers, strides, dilations and padding past the
    /// kernel; 1x1; dense and grouped convs, batch 2, odd channel counts;
    /// 3x3 stride-1 convs (the last large enough for Winograd).
    #[test]
    fn conv2d_paths_match_numpy() {
        let cases = cases();
        assert!(cases.len() >= 18);
        for case in &cases {
            check(case, conv);
        }
    }

    /// The 3x3 stride-1 cases through Winograd F(2,3) itself, whatever
    /// their size: partial tiles, no / asymmetric padding, groups, batch 2,
    /// rows wider than one vector.
    #[test]
    fn winograd_matches_numpy() {
        let cases: Vec<Case> = cases()
            .into_iter()
            .filter(|c| c.name.starts_with("winograd_"))
            .collect();
        assert_eq!(cases.len(), 7);
        for case in &cases {
            check(case, conv_winograd);
        }
    }

    /// Every case the packed-weight GEMM takes (dense / grouped, 1x1, the
    /// packed_ cases at 7x7 and 14x14, batch 2), through it with its weight
    /// packed as the executor packs a constant, at 1 and 2 threads.
    #[test]
    fn packed_weight_convs_match_numpy() {
        let mut ran = Vec::new();
        for case in cases() {
            let [xd, wd, yd] = &case.dims;
            let Some((nr, packed)) = packed_copy(&case.window, case.groups, [xd, wd, yd], &case.w)
            else {
                continue;
            };
            let op = Op::Conv {
                window: case.window.clone(),
                groups: case.groups,
            };
            let repacked = Case {
                w: packed,
                name: format!("{} (packed)", case.name),
                dims: case.dims.clone(),
                window: case.window.clone(),
                bias: case.bias.clone(),
                x: case.x.clone(),
                want: case.want.clone(),
                groups: case.groups,
            };
            for threads in [1, 2] {
                crate::threads::with_limit(Some(threads), || {
                    check_with(&repacked, |_, _, i, o| conv_packed_weights(&op, nr, i, o))
                });
            }
            ran.push(case.name);
        }
        if panel_width().is_some() {
            for want in [
                "pointwise_1x1_batch2",
                "packed_3x3_7x7",
                "packed_3x3_14x14_batch2",
            ] {
                assert!(ran.iter().any(|n| n == want), "{want} not packed: {ran:?}");
            }
        }
    }

    /// The valid range against a scan of every position.
    #[test]
    fn valid_ranges_match_a_scan() {
        for len in 1..9 {
            for k in 0..4 {
                for s in 1..4 {
                    for d in 1..3 {
                        for p in 0..4 {
                            let out = 12;
                            let want: Vec<usize> = (0..out)
                                .filter(|&o| {
                                    let at = (o * s + k * d) as isize - p as isize;
                                    (0..len as isize).contains(&at)
                                })
                                .collect();
                            let got: Vec<usize> = valid(out, len, k, (s, d, p)).collect();
                            assert_eq!(got, want, "len {len} k {k} s {s} d {d} p {p}");
                        }
                    }
                }
            }
        }
    }
}
