//! Attention family: fused scaled dot-product attention and rope.
//!
//! Attention runs one query row at a time with a score buffer of length Sk,
//! so no [Sq, Sk] matrix is materialised. It matches the decomposition in
//! `rlx_ir::ops::attention` (scale, softcap, mask, max-subtracted softmax,
//! then · v), fully masked rows giving NaN as there.

use super::norm::{elems, elems_mut};
use super::scalar::{nan_max, Real};
use super::{broadcast_strides, for_each_strided, KernelResult, View, ViewMut};
use crate::with_real;
use rlx_ir::op::MaskKind;
use rlx_ir::DType;

/// Dot product with independent partial sums so the loop vectorises.
fn dot<T: Real>(a: &[T], b: &[T]) -> T {
    let mut acc = [T::ZERO; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = ca.remainder().iter().zip(cb.remainder());
    let mut s = tail.fold(T::ZERO, |s, (&x, &y)| s + x * y);
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] = acc[l] + x[l] * y[l];
        }
    }
    for v in acc {
        s = s + v;
    }
    s
}

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
        return Err(format!(
            "attention: q {q:?}, k {k:?}, v {v:?} need one rank >= 2"
        ));
    }
    if q[r - 1] != k[r - 1] || v[r - 2] != k[r - 2] {
        return Err(format!(
            "attention: q {q:?}, k {k:?}, v {v:?}: head dims or key lengths differ"
        ));
    }
    for i in 0..r - 2 {
        let grouped = i + 3 == r && k[i] > 0 && q[i] % k[i] == 0;
        if k[i] != v[i] || (q[i] != k[i] && !grouped) {
            return Err(format!(
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

fn attention_real<T: Real>(
    mask: MaskKind,
    scale: Option<f64>,
    softcap: Option<f64>,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let (qv, kv, vv) = (&ins[0], &ins[1], &ins[2]);
    let e = extents(qv.dims, kv.dims, vv.dims)?;
    let (q, k, v) = (
        elems::<T>(qv, "q")?,
        elems::<T>(kv, "k")?,
        elems::<T>(vv, "v")?,
    );
    let r = qv.dims.len();
    let mut out_dims = qv.dims.to_vec();
    out_dims[r - 1] = e.dv;
    let o = elems_mut::<T>(out, &out_dims)?;

    let mut rows = Vec::new();
    let mut key_stride = 0;
    let data = match mask {
        MaskKind::Custom | MaskKind::Bias => {
            let m = &ins[3];
            let mut scores = qv.dims.to_vec();
            scores[r - 1] = e.sk;
            let fits = m.dims.len() <= r
                && m.dims
                    .iter()
                    .rev()
                    .zip(scores.iter().rev())
                    .all(|(&a, &b)| a == 1 || a == b);
            if !fits {
                return Err(format!(
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
    let mut s = vec![T::ZERO; sk];
    for b in 0..e.batches {
        let kb = (b / e.hq) * e.hkv + (b % e.hq) / group;
        let ks = &k[kb * sk * d..(kb + 1) * sk * d];
        let vs = &v[kb * sk * dv..(kb + 1) * sk * dv];
        for i in 0..sq {
            let row = b * sq + i;
            let qi = &q[row * d..(row + 1) * d];
            let orow = &mut o[row * dv..(row + 1) * dv];
            let (j0, j1) = key_range(mask, i, sk, off);
            if j0 >= j1 {
                orow.fill(T::NAN);
                continue;
            }
            let mut max = T::NEG_INFINITY;
            for j in j0..j1 {
                let keep = match data {
                    MaskData::Keep(m) => m[rows[row] + j * key_stride] != 0,
                    _ => true,
                };
                let mut x = T::NEG_INFINITY;
                if keep {
                    x = dot(qi, &ks[j * d..(j + 1) * d]) * scale;
                    if let Some(c) = cap {
                        x = (x / c).tanh() * c;
                    }
                }
                if let MaskData::Bias(m) = data {
                    x = x + m[rows[row] + j * key_stride];
                }
                s[j] = x;
                max = nan_max(max, x);
            }
            let mut sum = 0f64;
            for x in &mut s[j0..j1] {
                *x = (*x - max).exp();
                sum += x.to_f64();
            }
            let den = T::from_f64(sum);
            orow.fill(T::ZERO);
            for j in j0..j1 {
                let p = s[j] / den;
                for (a, &w) in orow.iter_mut().zip(&vs[j * dv..(j + 1) * dv]) {
                    *a = *a + p * w;
                }
            }
        }
    }
    Ok(())
}

/// Scaled dot-product attention.
pub fn attention(
    mask: MaskKind,
    scale: Option<f64>,
    softcap: Option<f64>,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let needs_mask = matches!(mask, MaskKind::Custom | MaskKind::Bias);
    if ins.len() != 3 + needs_mask as usize {
        return Err(format!("attention with {mask:?}: {} inputs", ins.len()));
    }
    let dt = ins[0].dtype;
    if ins[1].dtype != dt || ins[2].dtype != dt {
        return Err(format!(
            "attention: q, k, v dtypes {dt}, {}, {}",
            ins[1].dtype, ins[2].dtype
        ));
    }
    if needs_mask {
        let want = if mask == MaskKind::Custom {
            DType::Bool
        } else {
            dt
        };
        if ins[3].dtype != want {
            return Err(format!(
                "attention: the {mask:?} mask must be {want}, is {}",
                ins[3].dtype
            ));
        }
    }
    with_real!(dt, ins, out, |i, o| attention_real::<T>(mask, scale, softcap, i, o); T)
}

fn rope_real<T: Real>(interleaved: bool, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    let r = x.dims.len();
    let (s, d) = (x.dims[r - 2], x.dims[r - 1]);
    let h = d / 2;
    if ins[1].dims != [s, h] || ins[2].dims != [s, h] {
        return Err(format!(
            "rope: cos {:?} and sin {:?} must be [{s}, {h}]",
            ins[1].dims, ins[2].dims
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
pub fn rope(interleaved: bool, ins: &[View], out: &mut ViewMut) -> KernelResult {
    if ins.len() != 3 {
        return Err(format!("rope: {} inputs", ins.len()));
    }
    let (x, dt) = (&ins[0], ins[0].dtype);
    if ins[1].dtype != dt || ins[2].dtype != dt {
        return Err(format!(
            "rope: x, cos, sin dtypes {dt}, {}, {}",
            ins[1].dtype, ins[2].dtype
        ));
    }
    if x.dims.len() < 2 || x.dims[x.dims.len() - 1] % 2 != 0 {
        return Err(format!(
            "rope needs x [.., S, D] with D even, given {:?}",
            x.dims
        ));
    }
    with_real!(dt, ins, out, |i, o| rope_real::<T>(interleaved, i, o); T)
}
