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
pub(crate) fn upsample(
    mode: InterpMode,
    align_corners: bool,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    if ins.len() != 1 {
        return Err(fail!("upsample takes 1 input, given {}", ins.len()));
    }
    let x = &ins[0];
    let r = x.dims.len();
    if r < 3 || out.dims.len() != r || out.dims[..2] != x.dims[..2] {
        return Err(fail!(
            "upsample of x {:?} cannot give {:?}",
            x.dims,
            out.dims
        ));
    }
    if (2..r).any(|ax| x.dims[ax] == 0 && out.dims[ax] != 0) {
        return Err(fail!(
            "upsample of an empty spatial dim: x {:?} to {:?}",
            x.dims,
            out.dims
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
    use crate::kernels::conv::tests::{close, run_as, seq};
    use rlx_ir::DType;

    fn run(
        mode: InterpMode,
        ac: bool,
        x: &[f32],
        in_dims: &[usize],
        out_dims: &[usize],
    ) -> Result<Vec<f32>, String> {
        run_as(
            DType::F32,
            |i, o| upsample(mode, ac, i, o),
            &[(in_dims, x)],
            out_dims,
            f32::NAN,
        )
    }

    // numpy reference (explicit loops); values printed as round(v, 7):
    //   x = ((np.arange(24) * 5) % 11 - 5) / 4 reshaped (1, 2, 3, 4)  (= seq(24, 5, 11))
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
    fn nearest1d_2d() {
        let x = seq(24, 5, 11);
        // nearest(x, (5, 3)): up along h, down along w
        let want = [
            -1.25, 0.0, 1.25, -1.25, 0.0, 1.25, 1.0, -0.5, 0.75, 1.0, -0.5, 0.75, 0.5, -1.0, 0.25,
            0.0, 1.25, -0.25, 0.0, 1.25, -0.25, -0.5, 0.75, -0.75, -0.5, 0.75, -0.75, -1.0, 0.25,
            -1.25,
        ];
        close(
            &run(InterpMode::Nearest, false, &x, &[1, 2, 3, 4], &[1, 2, 5, 3]).unwrap(),
            &want,
        );
        // nearest(x.reshape(1, 1, 24), (7,))
        let want = [-1.25, -0.25, 0.75, 0.25, 1.25, 0.75, -1.0];
        close(
            &run(InterpMode::Nearest, false, &x, &[1, 1, 24], &[1, 1, 7]).unwrap(),
            &want,
        );
        assert_eq!(
            run(InterpMode::Nearest, false, &x, &[1, 2, 3, 4], &[1, 2, 3, 4]).unwrap(),
            x
        );
    }

    #[test]
    fn bilinear2d_align_corners() {
        let x = seq(24, 5, 11);
        let cases: [(bool, [usize; 4], &[f64]); 4] = [
            // bilinear(x, 5, 3, False)
            (
                false,
                [1, 2, 5, 3],
                &[
                    -1.0416667, 0.625, -0.0, -0.325, 0.425, -0.2, 0.75, 0.125, -0.5, 0.45, -0.175,
                    -0.8, 0.25, -0.375, -1.0, 0.2083333, 0.5, 0.7916667, 0.0083333, 0.3, 0.5916667,
                    -0.2916667, 0.0, 0.2916667, -0.5916667, -0.3, -0.0083333, -0.7916667, -0.5,
                    -0.2083333,
                ],
            ),
            // bilinear(x, 5, 3, True)
            (
                true,
                [1, 2, 5, 3],
                &[
                    -1.25, 0.625, -0.25, -0.125, 0.375, -0.5, 1.0, 0.125, -0.75, 0.75, -0.125,
                    -1.0, 0.5, -0.375, -1.25, 0.0, 0.5, 1.0, -0.25, 0.25, 0.75, -0.5, 0.0, 0.5,
                    -0.75, -0.25, 0.25, -1.0, -0.5, 0.0,
                ],
            ),
            // bilinear(x, 2, 7, False): down along h, up along w
            (
                false,
                [1, 2, 2, 7],
                &[
                    -0.6875, -0.4866071, -0.1651786, 0.5, 1.0178571, 0.1607143, -0.375, 0.625,
                    0.0892857, -0.7678571, -0.25, 0.2678571, -0.5892857, -1.125, -0.125, 0.3214286,
                    1.0357143, 0.375, -0.2857143, 0.4285714, 0.875, -0.875, -0.4285714, 0.2857143,
                    -0.375, -1.0357143, -0.3214286, 0.125,
                ],
            ),
            // bilinear(x, 1, 7, True): a single output row samples row 0
            (
                true,
                [1, 2, 1, 7],
                &[
                    -1.25, -0.625, 0.0, 0.625, 1.25, 0.5, -0.25, 0.0, 0.625, 1.25, 0.5, -0.25,
                    0.375, 1.0,
                ],
            ),
        ];
        for (ac, dims, want) in cases {
            close(
                &run(InterpMode::Linear, ac, &x, &[1, 2, 3, 4], &dims).unwrap(),
                want,
            );
        }
    }

    #[test]
    fn upsample_errors() {
        let x = seq(24, 5, 11);
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
        assert!(run(
            InterpMode::Nearest,
            false,
            &x[1..],
            &[1, 2, 3, 4],
            &[1, 2, 3, 4]
        )
        .is_err());
    }
}
