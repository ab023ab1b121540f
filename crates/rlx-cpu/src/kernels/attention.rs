//! Attention family: fused scaled dot-product attention and rope.
//!
//! Attention runs per (batch, head) and block of query rows: one GEMM for
//! the block's scores, the masked softmax in place, one GEMM for `p · v`;
//! the block bounds the score buffer (no full [Sq, Sk] matrix for long
//! sequences). It matches the decomposition in
//! `rlx_ir::ops::attention` (scale, softcap, mask, max-subtracted softmax,
//! then · v), fully masked rows giving NaN as there.

use super::fastmath::SoftmaxExp;
use super::gemm::{num_threads, GemmFloat, Strided, GEMM_GRAIN};
use super::norm::{elems, elems_mut};
use super::scalar::{nan_max, Real};
use super::{broadcast_strides, for_each_strided, KernelResult, View, ViewMut};
use crate::team;
use crate::with_real;
use rlx_ir::op::{AttentionLayout, MaskKind};
use rlx_ir::DType;

/// Extents of one attention call, from validated q / k / v dims.
struct Extents {
    /// Product of q's leading dims (query batches × heads).
    batches: usize,
    /// q heads and kv heads (axis rank-3; 1 / 1 for rank 2).
    hq: usize,
    hkv: usize,
    sq: usize,
    sk: usize,
    d: usize,
    dv: usize,
}

fn extents(q: &[usize], k: &[usize], v: &[usize]) -> Result<Extents, String> {
    let r = q.len();
    if r < 2 || k.len() != r || v.len() != r {
        return Err(fail!(
            "attention: q {q:?}, k {k:?}, v {v:?} need one rank >= 2"
        ));
    }
    if q[r - 1] != k[r - 1] || v[r - 2] != k[r - 2] {
        return Err(fail!(
            "attention: q {q:?}, k {k:?}, v {v:?}: head dims or key lengths differ"
        ));
    }
    for i in 0..r - 2 {
        let grouped = i + 3 == r && k[i] > 0 && q[i].is_multiple_of(k[i]);
        if k[i] != v[i] || (q[i] != k[i] && !grouped) {
            return Err(fail!(
                "attention: q {q:?}, k {k:?}, v {v:?} differ on axis {i}"
            ));
        }
    }
    let (hq, hkv) = if r >= 3 { (q[r - 3], k[r - 3]) } else { (1, 1) };
    Ok(Extents {
        batches: q[..r - 2].iter().product(),
        hq,
        hkv,
        sq: q[r - 2],
        sk: k[r - 2],
        d: q[r - 1],
        dv: v[r - 1],
    })
}

/// The keys `j0..j1` a structural mask can keep for query `i` (`off` = Sk - Sq).
fn key_range(mask: MaskKind, i: usize, sk: usize, off: i64) -> (usize, usize) {
    let diag = i as i64 + off; // the last key query i may see
    let clamp = |j: i64| j.clamp(0, sk as i64) as usize;
    match mask {
        MaskKind::Causal => (0, clamp(diag + 1)),
        MaskKind::SlidingWindow(w) => {
            let w = i64::try_from(w).unwrap_or(i64::MAX);
            (clamp(diag.saturating_sub(w) + 1), clamp(diag + 1))
        }
        _ => (0, sk),
    }
}

/// A mask input read through broadcast strides: element of (row, key j) is
/// at `rows[row] + j * key_stride`.
enum MaskData<'a, T> {
    None,
    Keep(&'a [u8]),
    Bias(&'a [T]),
}

/// Multiply-adds of its two products from which attention splits its
/// heads over threads: below the GEMM grain, since each head also runs a
/// softmax over its scores and two small GEMM calls' set-up (12 heads of 16
/// x 16 x 32, 0.2 M multiply-adds, took ~23 us on one core).
const ATTENTION_GRAIN: usize = GEMM_GRAIN / 16;

/// Where one (batch, head)'s rows of q, k, v and the output lie: the
/// heads-major layout keeps each head's `[S, D]` block contiguous, the
/// sequence-major one interleaves the heads row by row.
struct Layout {
    seq_major: bool,
    hq: usize,
    hkv: usize,
    sq: usize,
    sk: usize,
}

impl Layout {
    /// Offset of row `i` of query head `b` (of `hq` per batch) and the
    /// stride between its rows, for rows of `width` values.
    fn q_rows(&self, b: usize, i: usize, width: usize) -> (usize, usize) {
        if self.seq_major {
            let (outer, h) = (b / self.hq, b % self.hq);
            (
                ((outer * self.sq + i) * self.hq + h) * width,
                self.hq * width,
            )
        } else {
            ((b * self.sq + i) * width, width)
        }
    }

    /// Offset of kv head `kb`'s first row and the stride between its rows.
    fn kv_rows(&self, kb: usize, width: usize) -> (usize, usize) {
        if self.seq_major {
            let (outer, h) = (kb / self.hkv, kb % self.hkv);
            ((outer * self.sk * self.hkv + h) * width, self.hkv * width)
        } else {
            (kb * self.sk * width, width)
        }
    }
}

fn attention_real<T: GemmFloat + SoftmaxExp>(
    mask: MaskKind,
    scale: Option<f64>,
    softcap: Option<f64>,
    layout: AttentionLayout,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let (qv, kv, vv) = (&ins[0], &ins[1], &ins[2]);
    let seq_major = layout == AttentionLayout::SeqMajor;
    let r = qv.dims.len();
    if seq_major && (r < 3 || kv.dims.len() != r || vv.dims.len() != r) {
        return Err(fail!(
            "sequence-major attention: q {:?}, k {:?}, v {:?} need one rank >= 3",
            qv.dims,
            kv.dims,
            vv.dims
        ));
    }
    // The heads-major dims: what the extents, the scores and the mask see.
    let heads_major = |d: &[usize]| {
        let mut d = d.to_vec();
        if seq_major {
            d.swap(r - 3, r - 2);
        }
        d
    };
    let qd = heads_major(qv.dims);
    let e = extents(&qd, &heads_major(kv.dims), &heads_major(vv.dims))?;
    let (q, k, v) = (
        elems::<T>(qv, "q")?,
        elems::<T>(kv, "k")?,
        elems::<T>(vv, "v")?,
    );
    let mut out_dims = qv.dims.to_vec();
    out_dims[r - 1] = e.dv;
    let o = elems_mut::<T>(out, &out_dims)?;
    let at = Layout {
        seq_major,
        hq: e.hq,
        hkv: e.hkv,
        sq: e.sq,
        sk: e.sk,
    };

    let mut rows = Vec::new();
    let mut key_stride = 0;
    let data = match mask {
        MaskKind::Custom | MaskKind::Bias => {
            let m = &ins[3];
            let mut scores = qd.clone();
            scores[r - 1] = e.sk;
            let fits = m.dims.len() <= r
                && m.dims
                    .iter()
                    .rev()
                    .zip(scores.iter().rev())
                    .all(|(&a, &b)| a == 1 || a == b);
            if !fits {
                return Err(fail!(
                    "attention: mask {:?} does not broadcast to scores {scores:?}",
                    m.dims
                ));
            }
            let st = broadcast_strides(m.dims, &scores);
            for_each_strided(&scores[..r - 1], &st[..r - 1], 0, |_, p| {
                rows.push(p as usize)
            });
            key_stride = st[r - 1] as usize;
            if mask == MaskKind::Custom {
                MaskData::Keep(elems::<u8>(m, "mask")?)
            } else {
                MaskData::Bias(elems::<T>(m, "bias")?)
            }
        }
        _ => MaskData::None,
    };

    let (sq, sk, d, dv) = (e.sq, e.sk, e.d, e.dv);
    if o.is_empty() {
        return Ok(());
    }
    if sk == 0 {
        // Softmax over no keys times an empty v: the empty contraction is 0.
        o.fill(T::ZERO);
        return Ok(());
    }
    let scale = T::from_f64(scale.unwrap_or(1.0 / (d as f64).sqrt()));
    let cap = softcap.map(T::from_f64);
    let off = sk as i64 - sq as i64;
    let group = e.hq / e.hkv.max(1);
    // Each (batch, head) runs two GEMMs per block of query rows: scores =
    // q_block · kᵀ (k read transposed in place), then p · v into a block
    // buffer whose rows, scaled by 1 / sum, go to the head's output rows;
    // the block bounds the score buffer to 64K entries.
    let block = ((1usize << 16) / sk).clamp(1, sq);
    let out = team::Disjoint::new(o);
    let run_batch = |b: usize, s: &mut [T], pv: &mut [T], threads: usize| {
        let kb = (b / e.hq) * e.hkv + (b % e.hq) / group;
        let (k_at, k_stride) = at.kv_rows(kb, d);
        let kt = Strided {
            data: k,
            offset: k_at,
            rows: d,
            cols: sk,
            row_stride: 1,
            col_stride: k_stride,
        };
        let (v_at, v_stride) = at.kv_rows(kb, dv);
        let vs = Strided {
            data: v,
            offset: v_at,
            rows: sk,
            cols: dv,
            row_stride: v_stride,
            col_stride: 1,
        };
        let mut inv_sums = Vec::with_capacity(block);
        for i0 in (0..sq).step_by(block) {
            let n = block.min(sq - i0);
            let sb = &mut s[..n * sk];
            let (q_at, q_stride) = at.q_rows(b, i0, d);
            let qs = Strided {
                data: q,
                offset: q_at,
                rows: n,
                cols: d,
                row_stride: q_stride,
                col_stride: 1,
            };
            T::gemm(qs, kt, sb, threads);
            // 1 / (row's sum of exponentials), applied to the row of p · v
            // (dv values) rather than to the row of p (sk values); 0 marks
            // a fully masked row (NaN out).
            inv_sums.clear();
            for (r, srow) in sb.chunks_mut(sk).enumerate() {
                let (i, row) = (i0 + r, b * sq + i0 + r);
                let (j0, j1) = key_range(mask, i, sk, off);
                if j0 >= j1 {
                    inv_sums.push(None);
                    srow.fill(T::ZERO);
                    continue;
                }
                let mut max = T::NEG_INFINITY;
                let contiguous_bias = match data {
                    MaskData::Bias(m) if key_stride == 1 && cap.is_none() => {
                        Some(&m[rows[row] + j0..rows[row] + j1])
                    }
                    _ => None,
                };
                if let Some(bias) = contiguous_bias {
                    // A bias row read in place (the usual padding mask).
                    max = scale_and_max(&mut srow[j0..j1], scale, Some(bias));
                } else if matches!(data, MaskData::None) && cap.is_none() {
                    max = scale_and_max(&mut srow[j0..j1], scale, None);
                } else {
                    for (j, x) in srow.iter_mut().enumerate().take(j1).skip(j0) {
                        let keep = match data {
                            MaskData::Keep(m) => m[rows[row] + j * key_stride] != 0,
                            _ => true,
                        };
                        let mut y = T::NEG_INFINITY;
                        if keep {
                            y = *x * scale;
                            if let Some(c) = cap {
                                y = (y / c).tanh() * c;
                            }
                        }
                        if let MaskData::Bias(m) = data {
                            y = y + m[rows[row] + j * key_stride];
                        }
                        *x = y;
                        max = nan_max(max, y);
                    }
                }
                inv_sums.push(Some(T::from_f64(
                    1.0 / T::exp_shifted_sum(&mut srow[j0..j1], max),
                )));
                srow[..j0].fill(T::ZERO);
                srow[j1..].fill(T::ZERO);
            }
            let p = Strided::row_major(&s[..n * sk], 0, n, sk);
            let pv = &mut pv[..n * dv];
            T::gemm(p, vs, pv, threads);
            for (r, (prow, inv)) in pv.chunks(dv).zip(&inv_sums).enumerate() {
                let (o_at, _) = at.q_rows(b, i0 + r, dv);
                // SAFETY: output row (b, i) is written by the one part
                // that runs head b, once.
                let orow = unsafe { out.range(o_at..o_at + dv) };
                match inv {
                    Some(inv) => orow.iter_mut().zip(prow).for_each(|(o, &x)| *o = x * *inv),
                    None => orow.fill(T::NAN),
                }
            }
        }
    };
    let threads = num_threads();
    let work = e.batches * sq * sk * (d + dv);
    let scratch = || (vec![T::ZERO; block * sk], vec![T::ZERO; block * dv]);
    if threads > 1 && e.batches > 1 && work >= ATTENTION_GRAIN {
        // Heads split over threads, each GEMM on its own thread.
        let groups = team::split(e.batches, threads, 1);
        team::parallel_for(groups.len(), |p| {
            let (mut s, mut pv) = scratch();
            for b in groups[p].clone() {
                run_batch(b, &mut s, &mut pv, 1);
            }
        });
    } else {
        let (mut s, mut pv) = scratch();
        for b in 0..e.batches {
            run_batch(b, &mut s, &mut pv, threads);
        }
    }
    Ok(())
}

/// `x = x * scale (+ bias)` over a score row, returning its max (NaN if
/// any score is NaN). The max is kept per lane of 16 so the loop vectorises
/// (a single running float max does not), and the loop is built for
/// AVX-512 or AVX2 where the CPU has them.
fn scale_and_max<T: Real>(xs: &mut [T], scale: T, bias: Option<&[T]>) -> T {
    #[inline(always)]
    fn each<T: Real>(xs: &mut [T], scale: T, bias: Option<&[T]>) -> T {
        let mut lanes = [T::NEG_INFINITY; 16];
        let mut nan = [false; 16];
        let mut j = 0;
        while j + 16 <= xs.len() {
            let chunk = &mut xs[j..j + 16];
            match bias {
                Some(b) => {
                    let bc = &b[j..j + 16];
                    for l in 0..16 {
                        chunk[l] = chunk[l] * scale + bc[l];
                    }
                }
                None => chunk.iter_mut().for_each(|x| *x = *x * scale),
            }
            for l in 0..16 {
                let x = chunk[l];
                nan[l] |= x.is_nan();
                lanes[l] = if x > lanes[l] { x } else { lanes[l] };
            }
            j += 16;
        }
        let mut max = T::NEG_INFINITY;
        let mut any_nan = nan.iter().any(|&n| n);
        for (i, x) in xs.iter_mut().enumerate().skip(j) {
            *x = match bias {
                Some(b) => *x * scale + b[i],
                None => *x * scale,
            };
            any_nan |= x.is_nan();
            max = if *x > max { *x } else { max };
        }
        for &l in &lanes {
            max = if l > max { l } else { max };
        }
        if any_nan {
            T::NAN
        } else {
            max
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn avx512<T: Real>(xs: &mut [T], scale: T, bias: Option<&[T]>) -> T {
        each(xs, scale, bias)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn avx2<T: Real>(xs: &mut [T], scale: T, bias: Option<&[T]>) -> T {
        each(xs, scale, bias)
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (and so AVX2 and FMA).
        return unsafe { avx512(xs, scale, bias) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { avx2(xs, scale, bias) };
    }
    each(xs, scale, bias)
}

/// Scaled dot-product attention, `softmax(mask(softcap(q kᵀ scale))) v`:
/// `ins` are `q`, `k`, `v` (laid out as `layout` says; `Hkv` may divide
/// `H` for grouped-query heads), plus the mask for [`MaskKind::Custom`]
/// (Bool, true = keep) or [`MaskKind::Bias`] (added, the q dtype), which
/// broadcasts to the scores `[.., H, Sq, Sk]`. `scale` defaults to
/// `1 / sqrt(D)`; `softcap` `c` maps a score `s` to `c tanh(s / c)`. Fully
/// masked rows give NaN, as the decomposition does. F16 / BF16 compute in
/// f32.
///
/// # Errors
/// The wrong number of inputs for `mask`, mismatched dtypes or dims, or a
/// dtype other than a float.
pub fn attention(
    mask: MaskKind,
    scale: Option<f64>,
    softcap: Option<f64>,
    layout: AttentionLayout,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let needs_mask = matches!(mask, MaskKind::Custom | MaskKind::Bias);
    if ins.len() != 3 + needs_mask as usize {
        return Err(fail!("attention with {mask:?}: {} inputs", ins.len()));
    }
    let dt = ins[0].dtype;
    if ins[1].dtype != dt || ins[2].dtype != dt {
        return Err(fail!(
            "attention: q, k, v dtypes {dt}, {}, {}",
            ins[1].dtype,
            ins[2].dtype
        ));
    }
    if needs_mask {
        let want = if mask == MaskKind::Custom {
            DType::Bool
        } else {
            dt
        };
        if ins[3].dtype != want {
            return Err(fail!(
                "attention: the {mask:?} mask must be {want}, is {}",
                ins[3].dtype
            ));
        }
    }
    with_real!(dt, ins, out, |i, o| attention_real::<T>(mask, scale, softcap, layout, i, o); T)
}

fn rope_real<T: Real>(interleaved: bool, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    let r = x.dims.len();
    let (s, d) = (x.dims[r - 2], x.dims[r - 1]);
    let h = d / 2;
    if ins[1].dims != [s, h] || ins[2].dims != [s, h] {
        return Err(fail!(
            "rope: cos {:?} and sin {:?} must be [{s}, {h}]",
            ins[1].dims,
            ins[2].dims
        ));
    }
    let (src, cos, sin) = (
        elems::<T>(x, "x")?,
        elems::<T>(&ins[1], "cos")?,
        elems::<T>(&ins[2], "sin")?,
    );
    let o = elems_mut::<T>(out, x.dims)?;
    if d == 0 {
        return Ok(());
    }
    for (t, (xr, or)) in src.chunks_exact(d).zip(o.chunks_exact_mut(d)).enumerate() {
        let pos = t % s;
        let (c, sn) = (&cos[pos * h..(pos + 1) * h], &sin[pos * h..(pos + 1) * h]);
        for i in 0..h {
            let (a, b) = if interleaved {
                (2 * i, 2 * i + 1)
            } else {
                (i, h + i)
            };
            let (x1, x2) = (xr[a], xr[b]);
            or[a] = x1 * c[i] - x2 * sn[i];
            or[b] = x2 * c[i] + x1 * sn[i];
        }
    }
    Ok(())
}

/// Rotary embedding.
pub(crate) fn rope(interleaved: bool, ins: &[View], out: &mut ViewMut) -> KernelResult {
    if ins.len() != 3 {
        return Err(fail!("rope: {} inputs", ins.len()));
    }
    let (x, dt) = (&ins[0], ins[0].dtype);
    if ins[1].dtype != dt || ins[2].dtype != dt {
        return Err(fail!(
            "rope: x, cos, sin dtypes {dt}, {}, {}",
            ins[1].dtype,
            ins[2].dtype
        ));
    }
    if x.dims.len() < 2 || x.dims[x.dims.len() - 1] % 2 != 0 {
        return Err(fail!(
            "rope needs x [.., S, D] with D even, given {:?}",
            x.dims
        ));
    }
    with_real!(dt, ins, out, |i, o| rope_real::<T>(interleaved, i, o); T)
}

#[cfg(test)]
mod tests {
    //! Expected values from numpy (float64); `data` as in the norm tests. The
    //! numpy reference, used for every attention case:
    //!
    //! ```python
    //! def att(q, k, v, mask="none", m=None, scale=None, cap=None, w=None):
    //!     if q.ndim >= 3 and q.shape[-3] != k.shape[-3]:
    //!         g = q.shape[-3] // k.shape[-3]; k = np.repeat(k, g, -3); v = np.repeat(v, g, -3)
    //!     s = q @ np.swapaxes(k, -1, -2) * (scale if scale is not None else 1 / np.sqrt(q.shape[-1]))
    //!     if cap is not None: s = cap * np.tanh(s / cap)
    //!     sq, sk = s.shape[-2:]
    //!     i = np.arange(sq)[:, None] + (sk - sq); j = np.arange(sk)[None, :]
    //!     if mask == "causal": s = np.where(j <= i, s, -np.inf)
    //!     if mask == "window": s = np.where((j <= i) & (j > i - w), s, -np.inf)
    //!     if mask == "custom": s = np.where(m, s, -np.inf)
    //!     if mask == "bias": s = s + m
    //!     e = np.exp(s - s.max(-1, keepdims=True))
    //!     return (e / e.sum(-1, keepdims=True)) @ v
    //! ```
    use super::*;
    use crate::kernels::norm::tests::{close, data, run, view};

    const NAN: f64 = f64::NAN;

    /// Runs attention on f32 `data(numel, seed)` inputs of the given dims.
    fn att(
        mask: MaskKind,
        scale: Option<f64>,
        softcap: Option<f64>,
        (qd, kd, vd): (&[usize], &[usize], &[usize]),
        seed: usize,
        extra: Option<View>,
    ) -> Result<Vec<f64>, String> {
        let n = |d: &[usize]| d.iter().product::<usize>();
        let (q, k, v) = (
            data(n(qd), seed),
            data(n(kd), seed + 1),
            data(n(vd), seed + 2),
        );
        let mut ins = vec![
            view(qd, DType::F32, &q),
            view(kd, DType::F32, &k),
            view(vd, DType::F32, &v),
        ];
        ins.extend(extra);
        let mut od = qd.to_vec();
        *od.last_mut().unwrap() = vd[vd.len() - 1];
        let got = run::<f32>(DType::F32, &od, &ins, |i, o| {
            attention(mask, scale, softcap, AttentionLayout::HeadsMajor, i, o)
        })
        .map_err(|e| e.to_string())?;
        Ok(got.into_iter().map(f64::from).collect())
    }

    #[test]
    fn grouped_query_heads() {
        // att(data(48,1).reshape(1,4,3,4), data(40,2).reshape(1,2,5,4), data(30,3).reshape(1,2,5,3))
        let want = [
            -0.83572537,
            1.79657822,
            0.39827816,
            -0.850376539,
            -1.37165769,
            0.399331914,
            2.49475517,
            0.249254448,
            -1.99309686,
            -1.38817196,
            -0.361657187,
            -0.139141043,
            2.49368612,
            0.252511301,
            -1.99597521,
            1.07842406,
            -0.313352188,
            2.31748441,
            -0.405015041,
            -0.0502775966,
            0.841635501,
            -1.67512934,
            -0.525022868,
            -0.438166146,
            2.23644876,
            -0.00578462341,
            -2.22951048,
            -2.13162471,
            0.316434828,
            -0.885286394,
            2.22607855,
            -0.000837611444,
            -2.22548498,
            -0.834549083,
            0.374914923,
            0.289792179,
        ];
        let dims: (&[usize], &[usize], &[usize]) = (&[1, 4, 3, 4], &[1, 2, 5, 4], &[1, 2, 5, 3]);
        close(
            att(MaskKind::None, None, None, dims, 1, None).unwrap(),
            &want,
            1e-5,
        );
        // 3 q heads do not group onto 2 kv heads.
        let bad: (&[usize], &[usize], &[usize]) = (&[1, 3, 3, 4], &[1, 2, 5, 4], &[1, 2, 5, 3]);
        assert!(att(MaskKind::None, None, None, bad, 1, None).is_err());
    }

    #[test]
    fn causal_fewer_queries_than_keys() {
        // att(data(24,4).reshape(2,3,4), data(40,5).reshape(2,5,4), data(20,6).reshape(2,5,2), "causal")
        let want = [
            -2.2489294,
            1.24997194,
            -0.997611831,
            2.49418601,
            -2.23156504,
            1.24087825,
            -1.15848198,
            0.814538905,
            1.69907953,
            -0.546785127,
            -1.74215492,
            1.7432627,
        ];
        let dims: (&[usize], &[usize], &[usize]) = (&[2, 3, 4], &[2, 5, 4], &[2, 5, 2]);
        close(
            att(MaskKind::Causal, None, None, dims, 4, None).unwrap(),
            &want,
            1e-5,
        );
    }

    #[test]
    fn causal_more_queries_than_keys_masks_rows() {
        // att(data(16,7).reshape(4,4), data(8,8).reshape(2,4), data(6,9).reshape(2,3), "causal")
        let want = [
            NAN, NAN, NAN, NAN, NAN, NAN, -1.0, 2.5, 0.25, -1.4073334, 2.0926666, -0.1573334,
        ];
        let dims: (&[usize], &[usize], &[usize]) = (&[4, 4], &[2, 4], &[2, 3]);
        close(
            att(MaskKind::Causal, None, None, dims, 7, None).unwrap(),
            &want,
            1e-5,
        );
    }

    #[test]
    fn sliding_window() {
        // att(data(16,10).reshape(4,4), data(16,11).reshape(4,4), data(12,12).reshape(4,3), "window", w=2)
        let want = [
            1.5,
            -0.75,
            2.75,
            1.4998089,
            -0.750191104,
            2.7498089,
            0.498935037,
            -1.75106496,
            1.74893504,
            -0.500038831,
            -2.74981555,
            0.749961169,
        ];
        let dims: (&[usize], &[usize], &[usize]) = (&[4, 4], &[4, 4], &[4, 3]);
        close(
            att(MaskKind::SlidingWindow(2), None, None, dims, 10, None).unwrap(),
            &want,
            1e-5,
        );
    }

    #[test]
    fn custom_mask_broadcast() {
        // m = ((np.arange(15)*7 % 5) < 3).reshape(3,5); m[1] = False
        // att(data(24,13).reshape(1,2,3,4), data(40,14).reshape(1,2,5,4), data(30,15).reshape(1,2,5,3), "custom", m)
        let want = [
            -0.179169256,
            -0.572550829,
            1.07083074,
            NAN,
            NAN,
            NAN,
            -1.05028599,
            -0.156474872,
            0.199714011,
            -0.0861121725,
            0.866339616,
            -1.38366038,
            NAN,
            NAN,
            NAN,
            0.902005231,
            0.0739112757,
            -2.17608872,
        ];
        let m: Vec<u8> = (0..15)
            .map(|i| (i * 7 % 5 < 3 && i / 5 != 1) as u8)
            .collect();
        let md = [3, 5];
        let dims: (&[usize], &[usize], &[usize]) = (&[1, 2, 3, 4], &[1, 2, 5, 4], &[1, 2, 5, 3]);
        let mv = view(&md, DType::Bool, &m);
        close(
            att(MaskKind::Custom, None, None, dims, 13, Some(mv)).unwrap(),
            &want,
            1e-5,
        );
        // A mask that does not broadcast, or of the wrong dtype, is an error.
        let bad = [2, 5];
        assert!(att(
            MaskKind::Custom,
            None,
            None,
            dims,
            13,
            Some(view(&bad, DType::Bool, &m[..10]))
        )
        .is_err());
        assert!(att(
            MaskKind::Custom,
            None,
            None,
            dims,
            13,
            Some(view(&md, DType::U8, &m))
        )
        .is_err());
    }

    #[test]
    fn bias_mask_broadcast() {
        // att(data(24,16).reshape(1,2,3,4), data(40,17).reshape(1,2,5,4), data(30,18).reshape(1,2,5,3),
        //     "bias", data(10,19).reshape(2,1,5))
        let want = [
            -1.48990428,
            -0.165194647,
            -0.247023658,
            -0.72687039,
            1.28215721,
            0.50403777,
            -1.9194342,
            0.632972627,
            -0.671377399,
            -0.80947268,
            0.276753088,
            0.44052732,
            -1.37854244,
            1.76716516,
            -0.128542442,
            -1.47740531,
            1.04565995,
            -0.227405311,
        ];
        let (bd, b) = ([2, 1, 5], data(10, 19));
        let dims: (&[usize], &[usize], &[usize]) = (&[1, 2, 3, 4], &[1, 2, 5, 4], &[1, 2, 5, 3]);
        let bv = view(&bd, DType::F32, &b);
        close(
            att(MaskKind::Bias, None, None, dims, 16, Some(bv)).unwrap(),
            &want,
            1e-5,
        );
    }

    #[test]
    fn scale_and_softcap() {
        // att(data(12,20).reshape(3,4), data(16,21).reshape(4,4), data(8,22).reshape(4,2), scale=0.7, cap=1.5)
        let want = [
            1.34892255,
            -0.622801325,
            0.253308263,
            -1.15405413,
            1.35024092,
            -0.63351897,
        ];
        let dims: (&[usize], &[usize], &[usize]) = (&[3, 4], &[4, 4], &[4, 2]);
        close(
            att(MaskKind::None, Some(0.7), Some(1.5), dims, 20, None).unwrap(),
            &want,
            1e-5,
        );
    }

    fn rope_case(interleaved: bool) -> Vec<f64> {
        let (xd, cd) = ([2, 3, 4], [3, 2]);
        let x = data(24, 23);
        let (c, s): (Vec<f32>, Vec<f32>) = data(6, 24)
            .into_iter()
            .zip(data(6, 25))
            .map(|(c, s)| (c / 4.0, s / 4.0))
            .unzip();
        let ins = [
            view(&xd, DType::F32, &x),
            view(&cd, DType::F32, &c),
            view(&cd, DType::F32, &s),
        ];
        let got = run::<f32>(DType::F32, &xd, &ins, |i, o| rope(interleaved, i, o)).unwrap();
        got.into_iter().map(f64::from).collect()
    }

    #[test]
    fn rope_half_and_interleaved() {
        // x = data(24,23).reshape(2,3,4); c = data(6,24).reshape(3,2)/4; s = data(6,25).reshape(3,2)/4
        // half:        x1, x2 = x[..., :2], x[..., 2:]; np.concatenate([x1*c - x2*s, x2*c + x1*s], -1)
        // interleaved: x1, x2 = x[..., 0::2], x[..., 1::2]; np.stack([x1*c - x2*s, x2*c + x1*s], -1).reshape(2,3,4)
        let half = [
            1.03125, -0.671875, -1.890625, -1.03125, 0.359375, 1.171875, 0.421875, -0.78125, 1.125,
            0.859375, -1.6875, 0.078125, -0.171875, -1.15625, -0.6875, 1.4375, 1.671875, -0.03125,
            0.203125, -0.453125, -1.15625, -1.78125, -0.09375, -1.375,
        ];
        let inter = [
            -0.515625, -1.890625, 0.59375, -1.3125, -1.171875, -0.671875, 0.296875, 0.75, 1.40625,
            -0.28125, 0.71875, 1.625, -1.71875, -0.6875, 0.109375, 1.15625, 0.140625, -0.890625,
            -0.90625, 1.078125, -0.875, 1.3125, -1.921875, 0.171875,
        ];
        close(rope_case(false), &half, 0.0);
        close(rope_case(true), &inter, 0.0);
    }
}
