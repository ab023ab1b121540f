//! Resampling family: nearest / linear resize of the spatial dims of
//! `[N, C, *sp]`, for any number of spatial dims.
//!
//! Both modes are separable, so the kernel resizes one spatial dim per pass
//! (bilinear = linear along h, then along w); a dim whose size is unchanged
//! is skipped, which is exact (as PyTorch's same-size copy).

use super::conv::check_buf;
use super::scalar::Real;
use super::{KernelResult, View, ViewMut};
use crate::with_real;
use rlx_ir::ops::upsample::InterpMode;

/// Per output index along one dim: the two source indices and the weight
/// of the second (PyTorch `area_pixel_compute_source_index`).
fn linear_taps(n_in: usize, n_out: usize, align_corners: bool) -> Vec<(usize, usize, f64)> {
    let scale = if align_corners {
        if n_out > 1 {
            (n_in - 1) as f64 / (n_out - 1) as f64
        } else {
            0.0
        }
    } else {
        n_in as f64 / n_out as f64
    };
    (0..n_out)
        .map(|j| {
            let src = if align_corners {
                scale * j as f64
            } else {
                (scale * (j as f64 + 0.5) - 0.5).max(0.0)
            };
            let i0 = (src as usize).min(n_in - 1);
            (i0, (i0 + 1).min(n_in - 1), src - i0 as f64)
        })
        .collect()
}

/// Resizes axis `ax` of `src` (of `dims`) to `n_out`.
fn resize_axis<T: Real>(
    mode: InterpMode,
    align_corners: bool,
    src: &[T],
    dims: &[usize],
    ax: usize,
    n_out: usize,
) -> Vec<T> {
    let n_in = dims[ax];
    let outer: usize = dims[..ax].iter().product();
    let inner: usize = dims[ax + 1..].iter().product();
    let mut dst = Vec::with_capacity(outer * n_out * inner);
    match mode {
        InterpMode::Nearest => {
            for o in 0..outer {
                for j in 0..n_out {
                    // Exact integer floor(j * in / out), not a rounded float scale.
                    let i = (j * n_in / n_out).min(n_in - 1);
                    dst.extend_from_slice(&src[(o * n_in + i) * inner..][..inner]);
                }
            }
        }
        InterpMode::Linear => {
            let taps: Vec<(usize, usize, T, T)> = linear_taps(n_in, n_out, align_corners)
                .into_iter()
                .map(|(i0, i1, l)| (i0, i1, T::from_f64(1.0 - l), T::from_f64(l)))
                .collect();
            for o in 0..outer {
                for &(i0, i1, w0, w1) in &taps {
                    let a = &src[(o * n_in + i0) * inner..][..inner];
                    let b = &src[(o * n_in + i1) * inner..][..inner];
                    dst.extend(a.iter().zip(b).map(|(&a, &b)| w0 * a + w1 * b));
                }
            }
        }
    }
    dst
}

fn upsample_real<T: Real>(mode: InterpMode, align_corners: bool, x: &View, out: &mut ViewMut) {
    let mut dims = x.dims.to_vec();
    let mut cur: Option<Vec<T>> = None;
    for ax in 2..dims.len() {
        let n_out = out.dims[ax];
        if dims[ax] == n_out {
            continue;
        }
        let next = resize_axis(
            mode,
            align_corners,
            cur.as_deref().unwrap_or(x.slice::<T>()),
            &dims,
            ax,
            n_out,
        );
        dims[ax] = n_out;
        cur = Some(next);
    }
    out.slice::<T>()
        .copy_from_slice(cur.as_deref().unwrap_or(x.slice::<T>()));
}

/// Nearest / linear resize of the spatial dims (PyTorch `interpolate`).
pub fn upsample(
    mode: InterpMode,
    align_corners: bool,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    if ins.len() != 1 {
        return Err(format!("upsample takes 1 input, given {}", ins.len()));
    }
    let x = &ins[0];
    let r = x.dims.len();
    if r < 3 || out.dims.len() != r || out.dims[..2] != x.dims[..2] {
        return Err(format!(
            "upsample of x {:?} cannot give {:?}",
            x.dims, out.dims
        ));
    }
    if (2..r).any(|ax| x.dims[ax] == 0 && out.dims[ax] != 0) {
        return Err(format!(
            "upsample of an empty spatial dim: x {:?} to {:?}",
            x.dims, out.dims
        ));
    }
    check_buf("x", x.dims, x.dtype, x.bytes, x.dtype)?;
    check_buf("out", out.dims, out.dtype, out.bytes, x.dtype)?;
    with_real!(x.dtype, ins, out, |i, o| {
        upsample_real::<T>(mode, align_corners, &i[0], o);
        Ok(())
    }; T)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::{f32_bytes, f32_bytes_mut};
    use rlx_ir::DType;

    fn run(
        mode: InterpMode,
        ac: bool,
        x: &[f32],
        in_dims: &[usize],
        out_dims: &[usize],
    ) -> Result<Vec<f32>, String> {
        let ins = [View {
            dims: in_dims,
            dtype: DType::F32,
            bytes: f32_bytes(x),
        }];
        let mut y = vec![f32::NAN; out_dims.iter().product()];
        upsample(
            mode,
            ac,
            &ins,
            &mut ViewMut {
                dims: out_dims,
                dtype: DType::F32,
                bytes: f32_bytes_mut(&mut y),
            },
        )?;
        Ok(y)
    }

    fn close(got: &[f32], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "at {i}: {g} vs {w}\n{got:?}"
            );
        }
    }

    /// `((i * 5) % 11 - 5) / 4`, the numpy tests' input.
    fn seq(n: usize) -> Vec<f32> {
        (0..n).map(|i| ((i * 5) % 11) as f32 / 4.0 - 1.25).collect()
    }

    // numpy reference (explicit loops), x = ((np.arange(24) * 5) % 11 - 5) / 4 reshaped (1, 2, 3, 4):
    //   def nearest(x, osp):
    //       y = np.zeros(x.shape[:2] + tuple(osp))
    //       for idx in np.ndindex(*y.shape):
    //           y[idx] = x[idx[:2] + tuple(idx[2+i] * x.shape[2+i] // osp[i] for i in range(len(osp)))]
    //       return y
    //   def src(j, n, m, ac):
    //       s = (j * (n - 1) / (m - 1) if m > 1 else 0.0) if ac else max((j + 0.5) * n / m - 0.5, 0.0)
    //       i0 = min(int(np.floor(s)), n - 1); return i0, min(i0 + 1, n - 1), s - i0
    //   def bilinear(x, oh, ow, ac):
    //       H, W = x.shape[2:]; y = np.zeros(x.shape[:2] + (oh, ow))
    //       for n, c, i, j in np.ndindex(*y.shape):
    //           h0, h1, lh = src(i, H, oh, ac); w0, w1, lw = src(j, W, ow, ac)
    //           y[n, c, i, j] = ((1-lh) * ((1-lw) * x[n,c,h0,w0] + lw * x[n,c,h0,w1])
    //                            + lh * ((1-lw) * x[n,c,h1,w0] + lw * x[n,c,h1,w1]))
    //       return y

    #[test]
    fn nearest2d() {
        // nearest(x, (5, 3)): up along h, down along w
        let want = [
            -1.25, 0.0, 1.25, -1.25, 0.0, 1.25, 1.0, -0.5, 0.75, 1.0, -0.5, 0.75, 0.5, -1.0, 0.25,
            0.0, 1.25, -0.25, 0.0, 1.25, -0.25, -0.5, 0.75, -0.75, -0.5, 0.75, -0.75, -1.0, 0.25,
            -1.25,
        ];
        let y = run(
            InterpMode::Nearest,
            false,
            &seq(24),
            &[1, 2, 3, 4],
            &[1, 2, 5, 3],
        )
        .unwrap();
        close(&y, &want);
        // nearest(x.reshape(1, 1, 24), (7,)) then the same size: identity
        let want1 = [-1.25, -0.25, 0.75, 0.25, 1.25, 0.75, -1.0];
        close(
            &run(
                InterpMode::Nearest,
                false,
                &seq(24),
                &[1, 1, 24],
                &[1, 1, 7],
            )
            .unwrap(),
            &want1,
        );
        let same = run(
            InterpMode::Nearest,
            false,
            &seq(24),
            &[1, 2, 3, 4],
            &[1, 2, 3, 4],
        )
        .unwrap();
        assert_eq!(same, seq(24));
    }

    #[test]
    fn bilinear2d_align_corners() {
        // bilinear(x, 5, 3, False)
        let want_half = [
            -1.0416666666666667,
            0.625,
            -2.220446049250313e-16,
            -0.32499999999999996,
            0.425,
            -0.20000000000000023,
            0.75,
            0.125,
            -0.5000000000000002,
            0.44999999999999996,
            -0.17500000000000004,
            -0.8000000000000004,
            0.25000000000000006,
            -0.375,
            -1.0000000000000004,
            0.2083333333333333,
            0.5,
            0.7916666666666669,
            0.008333333333333276,
            0.3,
            0.5916666666666668,
            -0.29166666666666674,
            0.0,
            0.29166666666666685,
            -0.5916666666666668,
            -0.30000000000000004,
            -0.008333333333333193,
            -0.7916666666666667,
            -0.5,
            -0.20833333333333315,
        ];
        // bilinear(x, 5, 3, True)
        let want_ac = [
            -1.25, 0.625, -0.25, -0.125, 0.375, -0.5, 1.0, 0.125, -0.75, 0.75, -0.125, -1.0, 0.5,
            -0.375, -1.25, 0.0, 0.5, 1.0, -0.25, 0.25, 0.75, -0.5, 0.0, 0.5, -0.75, -0.25, 0.25,
            -1.0, -0.5, 0.0,
        ];
        // bilinear(x, 2, 7, False): down along h, up along w
        let want_half2 = [
            -0.6875,
            -0.4866071428571428,
            -0.1651785714285714,
            0.5,
            1.0178571428571428,
            0.1607142857142858,
            -0.375,
            0.625,
            0.08928571428571436,
            -0.7678571428571429,
            -0.25,
            0.26785714285714257,
            -0.5892857142857142,
            -1.125,
            -0.125,
            0.3214285714285714,
            1.0357142857142858,
            0.375,
            -0.2857142857142855,
            0.4285714285714285,
            0.875,
            -0.875,
            -0.4285714285714286,
            0.28571428571428575,
            -0.375,
            -1.0357142857142856,
            -0.3214285714285715,
            0.125,
        ];
        // bilinear(x, 1, 7, True): a single output row samples row 0
        let want_ac2 = [
            -1.25, -0.625, 0.0, 0.625, 1.25, 0.5, -0.25, 0.0, 0.625, 1.25, 0.5, -0.25, 0.375, 1.0,
        ];
        let x = seq(24);
        close(
            &run(InterpMode::Linear, false, &x, &[1, 2, 3, 4], &[1, 2, 5, 3]).unwrap(),
            &want_half,
        );
        close(
            &run(InterpMode::Linear, true, &x, &[1, 2, 3, 4], &[1, 2, 5, 3]).unwrap(),
            &want_ac,
        );
        close(
            &run(InterpMode::Linear, false, &x, &[1, 2, 3, 4], &[1, 2, 2, 7]).unwrap(),
            &want_half2,
        );
        close(
            &run(InterpMode::Linear, true, &x, &[1, 2, 3, 4], &[1, 2, 1, 7]).unwrap(),
            &want_ac2,
        );
    }

    #[test]
    fn upsample_errors() {
        let x = seq(24);
        assert!(run(InterpMode::Linear, false, &x, &[1, 2, 3, 4], &[1, 3, 5, 3]).is_err());
        assert!(run(InterpMode::Linear, false, &x, &[1, 2, 3, 4], &[1, 2, 5]).is_err());
        assert!(run(
            InterpMode::Nearest,
            false,
            &[],
            &[1, 2, 0, 4],
            &[1, 2, 3, 4]
        )
        .is_err());
    }
}
