//! Fast paths of conv over two spatial dims (`[N, C, H, W]`), the CNN case:
//! a direct depthwise kernel (one input channel per group), and an im2col
//! that copies whole rows (or, for a 1x1 stride-1 unpadded conv, none: the
//! input already is the column matrix). Row ranges replace the per-element
//! padding test of the N-d tap table.

use super::scalar::Real;
use crate::team;
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
    /// split over the team. `y` starts as the bias (or zero).
    pub(super) fn depthwise<T: Real>(&self, x: &[T], wt: &[T], bias: Option<&[T]>, y: &mut [T]) {
        let (pin, pout, kn) = (self.h * self.w, self.oh * self.ow, self.kh * self.kw);
        let og = self.o / self.groups;
        let planes = self.batch * self.o;
        if pout == 0 || planes == 0 {
            return;
        }
        let ranges = team::split(planes, team::threads(), 1);
        let shared = team::Disjoint::new(y);
        team::parallel_for(ranges.len(), |part| {
            for plane in ranges[part].clone() {
                let (n, oc) = (plane / self.o, plane % self.o);
                let xp = &x[(n * self.c + oc / og) * pin..][..pin];
                let wk = &wt[oc * kn..][..kn];
                // SAFETY: each plane belongs to exactly one part.
                let yp = unsafe { shared.range(plane * pout..(plane + 1) * pout) };
                yp.fill(bias.map_or(T::ZERO, |b| b[oc]));
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
        });
    }

    /// Fills `col` (`[cg * kh * kw, oh * ow]`) with the taps of the `cg`
    /// input planes `xg`: row `(c, ky, kx)` holds the input under that tap
    /// at every output position, zero in the padding.
    pub(super) fn im2col<T: Real>(&self, xg: &[T], cg: usize, col: &mut [T]) {
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        let mut rows = col.chunks_exact_mut(pout);
        for c in 0..cg {
            let xc = &xg[c * pin..][..pin];
            for ky in 0..self.kh {
                let valid_rows = self.rows(ky);
                for kx in 0..self.kw {
                    let Some(dst) = rows.next() else { return };
                    let cols = self.cols(kx);
                    for (oy, drow) in dst.chunks_exact_mut(self.ow).enumerate() {
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

#[cfg(test)]
mod tests {
    use super::valid;
    use crate::kernels::conv::{conv, conv_winograd, tests::run_as};
    use crate::kernels::{View, ViewMut};
    use rlx_ir::op::Window;
    use rlx_ir::DType;
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
    /// their size: partial tiles, no / asymmetric padding, groups, batch 2.
    #[test]
    fn winograd_matches_numpy() {
        let cases: Vec<Case> = cases()
            .into_iter()
            .filter(|c| c.name.starts_with("winograd_"))
            .collect();
        assert_eq!(cases.len(), 5);
        for case in &cases {
            check(case, conv_winograd);
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
