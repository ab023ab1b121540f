//! Normalisation family: native softmax / log-softmax / layer / rms / group norm.
//!
//! Statistics (sums, means, variances) accumulate in f64 with a two-pass
//! mean / variance, so f32 results are at least as accurate as the
//! decompositions in `rlx_ir::ops::norm`, which these kernels match.

use super::fastmath::SoftmaxExp;
use super::reduce::split_axis;
use super::scalar::{nan_max, Pod, Real};
use super::{KernelResult, View, ViewMut};
use crate::with_real;
use rlx_ir::DType;

/// The elements of `v`, checked against its dims.
pub(crate) fn elems<'a, T: Pod>(v: &View<'a>, what: &str) -> Result<&'a [T], String> {
    if v.bytes.len() != v.numel() * std::mem::size_of::<T>() {
        return Err(fail!(
            "{what}: {} bytes for dims {:?}",
            v.bytes.len(),
            v.dims
        ));
    }
    Ok(v.slice::<T>())
}

/// The elements of `out`, checked to have exactly `dims`.
pub(crate) fn elems_mut<'a, T: Pod>(
    out: &'a mut ViewMut,
    dims: &[usize],
) -> Result<&'a mut [T], String> {
    let n: usize = dims.iter().product();
    if out.dims != dims || out.bytes.len() != n * std::mem::size_of::<T>() {
        return Err(fail!("output dims {:?}, expected {dims:?}", out.dims));
    }
    Ok(out.slice::<T>())
}

/// The input count must lie in `lo..=hi`.
fn arity(ins: &[View], lo: usize, hi: usize, what: &str) -> KernelResult {
    if ins.len() < lo || ins.len() > hi {
        return Err(fail!("{what}: {} inputs", ins.len()));
    }
    Ok(())
}

/// Optional (gamma, beta) slices.
type Affine<'a, T> = (Option<&'a [T]>, Option<&'a [T]>);

/// Optional affine parameters `ins[1..]`, each of `dims` and the input dtype.
fn affine_params<'a, T: Pod>(
    ins: &[View<'a>],
    dims: &[usize],
    what: &str,
) -> Result<Affine<'a, T>, String> {
    let mut ps = [None, None];
    for (p, v) in ps.iter_mut().zip(&ins[1..]) {
        if v.dims != dims || v.dtype != ins[0].dtype {
            return Err(fail!(
                "{what}: affine parameter {:?} {}, expected {dims:?}",
                v.dims,
                v.dtype
            ));
        }
        *p = Some(elems::<T>(v, what)?);
    }
    Ok((ps[0], ps[1]))
}

/// `eps` as the decomposition sees it: a constant of the input dtype.
fn eps_of<T: Real>(eps: f64) -> f64 {
    T::from_f64(eps).to_f64()
}

/// (mean, 1 / sqrt(biased variance + eps)) of `xs`, two-pass in f64 (eight
/// partial sums per pass, so the adds pipeline and vectorise).
#[inline(always)]
fn moments<T: Real>(xs: &[T], eps: f64) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = lane_sum(xs, |v| v) / n;
    let var = lane_sum(xs, |v| {
        let c = v - mean;
        c * c
    }) / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// `sum(f(x))` over `xs` in f64 with eight independent accumulators.
#[inline(always)]
fn lane_sum<T: Real>(xs: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0f64; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += f(v.to_f64());
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|v| f(v.to_f64())).sum();
    acc.iter().sum::<f64>() + tail
}

fn softmax_real<T: Real + SoftmaxExp>(
    axis: usize,
    log: bool,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    let src = elems::<T>(x, "softmax")?;
    let o = elems_mut::<T>(out, x.dims)?;
    let (outer, n, inner) = split_axis(x.dims, axis);
    if src.is_empty() {
        return Ok(());
    }
    if inner == 1 {
        // The last axis: each row's exponentials in one vectorised pass
        // (the same `exp` as the elementwise `Exp` op), not a call per value.
        for (orow, row) in o.chunks_exact_mut(n).zip(src.chunks_exact(n)) {
            let max = row.iter().fold(T::NEG_INFINITY, |m, &v| nan_max(m, v));
            orow.copy_from_slice(row);
            let sum = T::from_f64(T::exp_shifted_sum(orow, max));
            if log {
                let d = sum.ln();
                for (ov, &v) in orow.iter_mut().zip(row) {
                    *ov = (v - max) - d;
                }
            } else {
                orow.iter_mut().for_each(|ov| *ov = *ov / sum);
            }
        }
        return Ok(());
    }
    // One [n, inner] block at a time with per-column running stats keeps
    // every pass contiguous whatever the axis.
    let mut max = vec![T::NEG_INFINITY; inner];
    let mut sum = vec![0f64; inner];
    let mut den = vec![T::ZERO; inner];
    for a in 0..outer {
        let blk = a * n * inner..(a + 1) * n * inner;
        let (xs, os) = (&src[blk.clone()], &mut o[blk]);
        max.fill(T::NEG_INFINITY);
        sum.fill(0.0);
        for row in xs.chunks_exact(inner) {
            max.iter_mut()
                .zip(row)
                .for_each(|(m, &v)| *m = nan_max(*m, v));
        }
        for (orow, row) in os.chunks_exact_mut(inner).zip(xs.chunks_exact(inner)) {
            for (((ov, &v), &m), s) in orow.iter_mut().zip(row).zip(&max).zip(sum.iter_mut()) {
                let e = (v - m).exp();
                *s += e.to_f64();
                *ov = e;
            }
        }
        // Round the sum to T before dividing / taking the log, as the decomposition does.
        for (d, &s) in den.iter_mut().zip(&sum) {
            *d = if log {
                T::from_f64(s).ln()
            } else {
                T::from_f64(s)
            };
        }
        for (orow, row) in os.chunks_exact_mut(inner).zip(xs.chunks_exact(inner)) {
            for (((ov, &v), &m), &d) in orow.iter_mut().zip(row).zip(&max).zip(&den) {
                *ov = if log { (v - m) - d } else { *ov / d };
            }
        }
    }
    Ok(())
}

/// softmax or log-softmax along `axis`.
pub(crate) fn softmax(axis: usize, log: bool, ins: &[View], out: &mut ViewMut) -> KernelResult {
    arity(ins, 1, 1, "softmax")?;
    if axis >= ins[0].dims.len() {
        return Err(fail!(
            "softmax: axis {axis} out of range for {:?}",
            ins[0].dims
        ));
    }
    let x = &ins[0];
    if !log
        && x.dtype == DType::F32
        && out.dtype == DType::F32
        && axis + 1 == x.dims.len()
        && x.numel() > 0
    {
        // Attention rows: every pass vectorised, the same numbers.
        let n = x.dims[axis];
        let src = elems::<f32>(x, "softmax")?;
        super::softmax_rows::softmax_last_f32(src, elems_mut::<f32>(out, x.dims)?, n);
        return Ok(());
    }
    with_real!(ins[0].dtype, ins, out, |i, o| softmax_real::<T>(axis, log, i, o); T)
}

/// How [`normalize_rows`] groups and scales: groups of `len` elements,
/// affine parameters indexed by position within the group / `inner`.
struct RowSpec<'a, T> {
    len: usize,
    inner: usize,
    eps: f64,
    gamma: Option<&'a [T]>,
    beta: Option<&'a [T]>,
}

/// Normalises consecutive groups of `spec.len` elements, then applies the
/// per-element affine. The same loops, built once more for AVX-512 and for
/// AVX2 and picked at run time (the f32 <-> f64 conversions vectorise two
/// and four times as wide as the SSE2 baseline; no FMA contraction, so the
/// builds agree bit for bit).
fn normalize_rows<T: Real>(src: &[T], o: &mut [T], spec: &RowSpec<T>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { normalize_rows_avx512(src, o, spec) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { normalize_rows_avx2(src, o, spec) };
    }
    normalize_rows_loop(src, o, spec)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn normalize_rows_avx512<T: Real>(src: &[T], o: &mut [T], spec: &RowSpec<T>) {
    normalize_rows_loop(src, o, spec)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn normalize_rows_avx2<T: Real>(src: &[T], o: &mut [T], spec: &RowSpec<T>) {
    normalize_rows_loop(src, o, spec)
}

#[inline(always)]
fn normalize_rows_loop<T: Real>(src: &[T], o: &mut [T], spec: &RowSpec<T>) {
    let &RowSpec {
        len,
        inner,
        eps,
        gamma,
        beta,
    } = spec;
    if len == 0 {
        return;
    }
    for (xs, os) in src.chunks_exact(len).zip(o.chunks_exact_mut(len)) {
        let (mean, rstd) = moments(xs, eps);
        let norm = |v: T| T::from_f64((v.to_f64() - mean) * rstd);
        match (gamma, beta) {
            // Parameters per element (the usual case): plain zipped loops.
            (Some(g), Some(b)) if inner == 1 => {
                for (((ov, &v), &g), &b) in os.iter_mut().zip(xs).zip(g).zip(b) {
                    *ov = norm(v) * g + b;
                }
            }
            (Some(g), None) if inner == 1 => {
                for ((ov, &v), &g) in os.iter_mut().zip(xs).zip(g) {
                    *ov = norm(v) * g;
                }
            }
            (None, None) => os.iter_mut().zip(xs).for_each(|(ov, &v)| *ov = norm(v)),
            _ => {
                for (k, (ov, &v)) in os.iter_mut().zip(xs).enumerate() {
                    let mut y = norm(v);
                    if let Some(g) = gamma {
                        y = y * g[k / inner];
                    }
                    if let Some(b) = beta {
                        y = y + b[k / inner];
                    }
                    *ov = y;
                }
            }
        }
    }
}

fn layer_norm_real<T: Real>(
    axis: usize,
    eps: f64,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    let src = elems::<T>(x, "layer_norm")?;
    let (gamma, beta) = affine_params::<T>(ins, &x.dims[axis..], "layer_norm")?;
    let o = elems_mut::<T>(out, x.dims)?;
    let len = x.dims[axis..].iter().product();
    let spec = RowSpec {
        len,
        inner: 1,
        eps: eps_of::<T>(eps),
        gamma,
        beta,
    };
    normalize_rows(src, o, &spec);
    Ok(())
}

/// layer norm over axes `axis..`.
pub(crate) fn layer_norm(axis: usize, eps: f64, ins: &[View], out: &mut ViewMut) -> KernelResult {
    arity(ins, 1, 3, "layer_norm")?;
    if axis >= ins[0].dims.len() {
        return Err(fail!(
            "layer_norm: axis {axis} out of range for {:?}",
            ins[0].dims
        ));
    }
    with_real!(ins[0].dtype, ins, out, |i, o| layer_norm_real::<T>(axis, eps, i, o); T)
}

fn rms_norm_real<T: Real>(eps: f64, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    let src = elems::<T>(x, "rms_norm")?;
    let d = x.dims[x.dims.len() - 1];
    let (gamma, _) = affine_params::<T>(ins, &[d], "rms_norm")?;
    let o = elems_mut::<T>(out, x.dims)?;
    if d == 0 {
        return Ok(());
    }
    let eps = eps_of::<T>(eps);
    for (xs, os) in src.chunks_exact(d).zip(o.chunks_exact_mut(d)) {
        let ms = lane_sum(xs, |v| v * v) / d as f64;
        let r = 1.0 / (ms + eps).sqrt();
        let norm = |v: T| T::from_f64(v.to_f64() * r);
        match gamma {
            Some(g) => {
                for ((ov, &v), &g) in os.iter_mut().zip(xs).zip(g) {
                    *ov = norm(v) * g;
                }
            }
            None => os.iter_mut().zip(xs).for_each(|(ov, &v)| *ov = norm(v)),
        }
    }
    Ok(())
}

/// rms norm over the last axis.
pub(crate) fn rms_norm(eps: f64, ins: &[View], out: &mut ViewMut) -> KernelResult {
    arity(ins, 1, 2, "rms_norm")?;
    if ins[0].dims.is_empty() {
        return Err("rms_norm of a scalar".into());
    }
    with_real!(ins[0].dtype, ins, out, |i, o| rms_norm_real::<T>(eps, i, o); T)
}

fn group_norm_real<T: Real>(
    groups: usize,
    eps: f64,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    let src = elems::<T>(x, "group_norm")?;
    let c = x.dims[1];
    let (gamma, beta) = affine_params::<T>(ins, &[c], "group_norm")?;
    let o = elems_mut::<T>(out, x.dims)?;
    let rest: usize = x.dims[2..].iter().product();
    // A (n, group) block is contiguous; channel k of the block spans `rest` elements.
    let len = c / groups * rest;
    if len == 0 {
        return Ok(());
    }
    let eps = eps_of::<T>(eps);
    for (bi, (xs, os)) in src
        .chunks_exact(len)
        .zip(o.chunks_exact_mut(len))
        .enumerate()
    {
        let c0 = (bi % groups) * (c / groups);
        let gamma = gamma.map(|g| &g[c0..c0 + c / groups]);
        let beta = beta.map(|b| &b[c0..c0 + c / groups]);
        let spec = RowSpec {
            len,
            inner: rest,
            eps,
            gamma,
            beta,
        };
        normalize_rows(xs, os, &spec);
    }
    Ok(())
}

/// group norm.
pub(crate) fn group_norm(groups: usize, eps: f64, ins: &[View], out: &mut ViewMut) -> KernelResult {
    if ins.len() != 1 && ins.len() != 3 {
        return Err(fail!(
            "group_norm: {} inputs (expects x or x, gamma, beta)",
            ins.len()
        ));
    }
    let dims = ins[0].dims;
    if dims.len() < 2 {
        return Err(fail!("group_norm needs [N, C, ...], given {dims:?}"));
    }
    if groups == 0 || !dims[1].is_multiple_of(groups) {
        return Err(fail!(
            "group_norm: {} channels do not split into {groups} groups",
            dims[1]
        ));
    }
    with_real!(ins[0].dtype, ins, out, |i, o| group_norm_real::<T>(groups, eps, i, o); T)
}

#[cfg(test)]
pub(crate) mod tests {
    //! Expected values come from numpy (float64) on the same exact inputs;
    //! `data(n, seed)` is `((np.arange(n)*37 + seed*11) % 23) / 4 - 2.75`.
    use super::*;
    use half::f16;
    use rlx_ir::DType;

    pub(crate) fn data(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 37 + seed * 11) % 23) as f32 / 4.0 - 2.75)
            .collect()
    }

    pub(crate) fn bytes<T: Pod>(v: &[T]) -> &[u8] {
        // SAFETY: Pod types have no padding and any byte view of them is valid.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }

    /// A view of `v` with `dims`, typed `dt`.
    pub(crate) fn view<'a, T: Pod>(dims: &'a [usize], dt: DType, v: &'a [T]) -> View<'a> {
        View {
            dims,
            dtype: dt,
            bytes: bytes(v),
        }
    }

    /// Runs `k` into a fresh `T` output of `dims`.
    pub(crate) fn run<T: Pod + Default>(
        dt: DType,
        dims: &[usize],
        ins: &[View],
        k: impl FnOnce(&[View], &mut ViewMut) -> KernelResult,
    ) -> Result<Vec<T>, String> {
        let mut out = vec![T::default(); dims.iter().product()];
        // SAFETY: as in `bytes`; every bit pattern of a Pod type is a value.
        let ob = unsafe {
            std::slice::from_raw_parts_mut(
                out.as_mut_ptr() as *mut u8,
                std::mem::size_of_val(&out[..]),
            )
        };
        k(
            ins,
            &mut ViewMut {
                dims,
                dtype: dt,
                bytes: ob,
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(out)
    }

    pub(crate) fn close(got: impl IntoIterator<Item = f64>, want: &[f64], tol: f64) {
        let got: Vec<f64> = got.into_iter().collect();
        assert_eq!(got.len(), want.len());
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let ok = if w.is_finite() {
                (g - w).abs() <= tol * (1.0 + w.abs())
            } else {
                g == w || (g.is_nan() && w.is_nan())
            };
            assert!(ok, "element {i}: got {g}, want {w}");
        }
    }

    fn f32s(v: Vec<f32>) -> impl Iterator<Item = f64> {
        v.into_iter().map(f64::from)
    }

    #[test]
    fn softmax_middle_axis() {
        // x = data(24, 1).reshape(2, 3, 4); m = x.max(1, keepdims=True)
        // np.exp(x - m) / np.exp(x - m).sum(1, keepdims=True)
        let want = [
            0.073233996,
            0.00618828527,
            0.661751722,
            0.073233996,
            0.892172714,
            0.075388748,
            0.0256588988,
            0.892172714,
            0.0345932902,
            0.918422967,
            0.31258938,
            0.0345932902,
            0.661751722,
            0.073233996,
            0.00618828527,
            0.661751722,
            0.0256588988,
            0.892172714,
            0.075388748,
            0.0256588988,
            0.31258938,
            0.0345932902,
            0.918422967,
            0.31258938,
        ];
        let (dims, x) = ([2, 3, 4], data(24, 1));
        let got = run::<f32>(DType::F32, &dims, &[view(&dims, DType::F32, &x)], |i, o| {
            softmax(1, false, i, o)
        });
        close(f32s(got.unwrap()), &want, 1e-6);
    }

    #[test]
    fn log_softmax_f64_with_neg_inf() {
        // x = data(15, 2).reshape(3, 5); x[1, 2] = -np.inf; s = x - x.max(1, keepdims=True)
        // s - np.log(np.exp(s).sum(1, keepdims=True))
        let ninf = f64::NEG_INFINITY;
        let want = [
            -0.420788352,
            -2.67078835,
            -4.92078835,
            -1.42078835,
            -3.67078835,
            -5.0868691,
            -1.5868691,
            ninf,
            -0.336869098,
            -2.5868691,
            -5.10820095,
            -1.60820095,
            -3.85820095,
            -0.358200949,
            -2.60820095,
        ];
        let mut x: Vec<f64> = data(15, 2).into_iter().map(f64::from).collect();
        x[7] = ninf;
        let dims = [3, 5];
        let got = run::<f64>(DType::F64, &dims, &[view(&dims, DType::F64, &x)], |i, o| {
            softmax(1, true, i, o)
        });
        close(got.unwrap(), &want, 1e-8);
    }

    const LAYER_NORM: [f64; 24] = [
        -0.628500921,
        -3.10980258,
        -0.689210316,
        -2.50230718,
        0.882041987,
        0.0327020264,
        -3.14250461,
        -0.529160961,
        -2.14950645,
        1.42759411,
        -0.706755066,
        -3.09810608,
        1.60013833,
        -2.88893223,
        -2.48098204,
        -1.17043983,
        2.8820581,
        2.48664179,
        -2.70032089,
        4.14374553,
        -0.594110646,
        2.76049516,
        -3.16313142,
        -2.43416598,
    ];

    #[test]
    fn layer_norm_two_axes_affine() {
        // x = data(24, 3).reshape(2, 3, 4); g = data(12, 4).reshape(3, 4); b = data(12, 5).reshape(3, 4)
        // m = x.mean((1, 2), keepdims=True); c = x - m
        // c / np.sqrt((c * c).mean((1, 2), keepdims=True) + 1e-5) * g + b
        let (dims, pd) = ([2, 3, 4], [3, 4]);
        let (x, g, b) = (data(24, 3), data(12, 4), data(12, 5));
        let ins = [
            view(&dims, DType::F32, &x),
            view(&pd, DType::F32, &g),
            view(&pd, DType::F32, &b),
        ];
        let got = run::<f32>(DType::F32, &dims, &ins, |i, o| layer_norm(1, 1e-5, i, o));
        close(f32s(got.unwrap()), &LAYER_NORM, 1e-6);
        // The same through the widened F16 path (inputs are exact in f16).
        let h = |v: &[f32]| v.iter().map(|&a| f16::from_f32(a)).collect::<Vec<_>>();
        let (xh, gh, bh) = (h(&x), h(&g), h(&b));
        let ins = [
            view(&dims, DType::F16, &xh),
            view(&pd, DType::F16, &gh),
            view(&pd, DType::F16, &bh),
        ];
        let got = run::<f16>(DType::F16, &dims, &ins, |i, o| layer_norm(1, 1e-5, i, o)).unwrap();
        close(got.into_iter().map(|v| v.to_f64()), &LAYER_NORM, 2e-3);
        // gamma must cover every normalised axis.
        let ins = [
            view(&dims, DType::F32, &x),
            view(&pd[1..], DType::F32, &g[..4]),
        ];
        assert!(run::<f32>(DType::F32, &dims, &ins, |i, o| layer_norm(1, 1e-5, i, o)).is_err());
    }

    #[test]
    fn rms_norm_gamma() {
        // x = data(12, 6).reshape(3, 4); g = data(4, 7)
        // x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g
        let want = [
            -0.987217604,
            0.0,
            -0.658145069,
            -1.27972652,
            0.445976409,
            4.08811708,
            0.0743294015,
            2.08122324,
            -0.69026836,
            -1.26549199,
            0.843661329,
            -0.536875391,
        ];
        let (dims, x, g) = ([3, 4], data(12, 6), data(4, 7));
        let ins = [
            view(&dims, DType::F32, &x),
            view(&dims[1..], DType::F32, &g),
        ];
        let got = run::<f32>(DType::F32, &dims, &ins, |i, o| rms_norm(1e-6, i, o));
        close(f32s(got.unwrap()), &want, 1e-6);
    }

    #[test]
    fn group_norm_affine() {
        // x = data(24, 8).reshape(2, 4, 3); g = data(4, 9); b = data(4, 10)
        // y = x.reshape(2, 2, 6); c = y - y.mean(2, keepdims=True)
        // (c / np.sqrt((c * c).mean(2, keepdims=True) + 1e-5)).reshape(2, 4, 3) * g[:, None] + b[:, None]
        let want = [
            0.706177155,
            2.01702445,
            3.32787174,
            0.653060119,
            -2.62405811,
            2.47368136,
            -2.77057301,
            -3.14088719,
            -2.56484291,
            2.2312567,
            -2.37709748,
            0.585415922,
            2.93947254,
            0.900376754,
            2.21122405,
            3.44467935,
            0.167561122,
            -3.10955711,
            -2.48904429,
            -2.81675611,
            -3.14446794,
            -0.172448095,
            2.44924649,
            -1.62894509,
        ];
        let (dims, pd) = ([2, 4, 3], [4]);
        let (x, g, b) = (data(24, 8), data(4, 9), data(4, 10));
        let ins = [
            view(&dims, DType::F32, &x),
            view(&pd, DType::F32, &g),
            view(&pd, DType::F32, &b),
        ];
        let got = run::<f32>(DType::F32, &dims, &ins, |i, o| group_norm(2, 1e-5, i, o));
        close(f32s(got.unwrap()), &want, 1e-6);
        assert!(run::<f32>(DType::F32, &dims, &ins, |i, o| group_norm(3, 1e-5, i, o)).is_err());
    }
}
