//! K-quant quantizers: ports of ggml's `quantize_row_q{2,3,4,5,6,8}_K_ref`
//! (the reference used when no importance matrix is given), operation for
//! operation, including ggml's integer/float conversions and its
//! `nearest_int` rounding trick. gguf-py implements none of these, so the
//! tests bound their round-trip error instead of comparing bytes.

use super::float::{f16_to_f32, f32_to_f16, put_f16};
use super::kquants::{scale_min_k4, QK_K};

const GROUP_MAX_EPS: f32 = 1e-15;

/// ggml's `nearest_int`: round to nearest (ties to even) through the float
/// adder. Only meaningful for |x| <= 2^22, like ggml's; larger inputs give a
/// bounded garbage value (callers clamp), never a panic.
#[inline]
fn nearest_int(x: f32) -> i32 {
    let val = x + 12_582_912.0;
    ((val.to_bits() as i32) & 0x007f_ffff) - 0x0040_0000
}

#[inline]
fn signed_absmax(x: &[f32]) -> (f32, f32) {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        let ax = v.abs();
        if ax > amax {
            amax = ax;
            max = v;
        }
    }
    (amax, max)
}

/// `make_qx_quants` with `rmse_type = 1` and no importance weights (the only
/// form the reference quantizers use): weights are `x * x`.
fn make_qx_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let (amax, max) = signed_absmax(x);
    if amax < GROUP_MAX_EPS {
        l_out.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let clamp = |l: i32| l.clamp(-nmax, nmax - 1);
    let mut iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for (i, &xi) in x.iter().enumerate() {
        let l = clamp(nearest_int(iscale * xi));
        l_out[i] = (l + nmax) as i8;
        let w = xi * xi;
        sumlx += w * xi * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    let mut scale = if suml2 != 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        sumlx = 0.0;
        suml2 = 0.0;
        for &xi in x {
            let l = clamp(nearest_int(iscale * xi));
            let w = xi * xi;
            sumlx += w * xi * l as f32;
            suml2 += w * l as f32 * l as f32;
        }
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            for (i, &xi) in x.iter().enumerate() {
                l_out[i] = (nmax + clamp(nearest_int(iscale * xi))) as i8;
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// `make_q3_quants(n, nmax, x, L, do_rmse = true)`.
fn make_q3_quants(nmax: i32, x: &[f32], l_out: &mut [i8]) -> f32 {
    let (amax, max) = signed_absmax(x);
    if amax < GROUP_MAX_EPS {
        l_out.iter_mut().for_each(|l| *l = 0);
        return 0.0;
    }
    let clamp = |l: i32| l.clamp(-nmax, nmax - 1);
    let iscale = -(nmax as f32) / max;
    let (mut sumlx, mut suml2) = (0.0f32, 0.0f32);
    for (i, &xi) in x.iter().enumerate() {
        let l = clamp(nearest_int(iscale * xi));
        l_out[i] = l as i8;
        let w = xi * xi;
        sumlx += w * xi * l as f32;
        suml2 += w * l as f32 * l as f32;
    }
    for _ in 0..5 {
        let mut changed = false;
        for (i, &xi) in x.iter().enumerate() {
            let w = xi * xi;
            let li = f32::from(l_out[i]);
            let mut slx = sumlx - w * xi * li;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * li * li;
                let new_l = clamp(nearest_int(xi * sl2 / slx));
                if new_l != i32::from(l_out[i]) {
                    slx += w * xi * new_l as f32;
                    sl2 += w * new_l as f32 * new_l as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        l_out[i] = new_l as i8;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for l in l_out.iter_mut() {
        *l += nmax as i8;
    }
    if suml2 > 0.0 {
        sumlx / suml2
    } else {
        0.0
    }
}

/// `make_qkx2_quants`: asymmetric (scale, min) fit with a grid search.
/// Returns (scale, -min).
#[allow(clippy::too_many_arguments)]
fn make_qkx2_quants(
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    l_out: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    use_mad: bool,
) -> (f32, f32) {
    let n = x.len();
    let mut laux = [0u8; 32];
    let (mut min, mut max) = (x[0], x[0]);
    let mut sum_w = weights[0];
    let mut sum_x = sum_w * x[0];
    for i in 1..n {
        if x[i] < min {
            min = x[i];
        }
        if x[i] > max {
            max = x[i];
        }
        let w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l_out.iter_mut().for_each(|l| *l = 0);
        return (0.0, -min);
    }
    let err = |d: f32| if use_mad { d.abs() } else { d * d };
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0.0f32;
    for i in 0..n {
        let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
        l_out[i] = l as u8;
        let diff = scale * f32::from(l_out[i]) + min - x[i];
        best_error += weights[i] * err(diff);
    }
    if nstep < 1 {
        return (scale, -min);
    }
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0.0f32, 0.0f32, 0.0f32);
        for i in 0..n {
            let l = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            laux[i] = l as u8;
            let (w, lf) = (weights[i], l as f32);
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        let d = sum_w * sum_l2 - sum_l * sum_l;
        if d > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / d;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / d;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let mut cur_error = 0.0f32;
            for i in 0..n {
                let diff = this_scale * f32::from(laux[i]) + this_min - x[i];
                cur_error += weights[i] * err(diff);
            }
            if cur_error < best_error {
                l_out[..n].copy_from_slice(&laux[..n]);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// Packs 2-bit values: `qs[j/4 + l] = L[j+l] | L[j+l+32] << 2 | ...`.
fn pack_2bit(l: &[u8], qs: &mut [u8]) {
    for j in (0..QK_K).step_by(128) {
        for k in 0..32 {
            qs[j / 4 + k] =
                l[j + k] | (l[j + k + 32] << 2) | (l[j + k + 64] << 4) | (l[j + k + 96] << 6);
        }
    }
}

pub(crate) fn quant_q2_k(x: &[f32], b: &mut [u8]) {
    const Q4SCALE: f32 = 15.0;
    let mut l = [0u8; QK_K];
    let mut scales = [0f32; 16];
    let mut mins = [0f32; 16];
    let (mut max_scale, mut max_min) = (0.0f32, 0.0f32);
    for j in 0..16 {
        let xs = &x[16 * j..16 * j + 16];
        let mut weights = [0f32; 16];
        for (w, v) in weights.iter_mut().zip(xs) {
            *w = v.abs();
        }
        let (s, m) = make_qkx2_quants(
            3,
            xs,
            &weights,
            &mut l[16 * j..16 * j + 16],
            -0.5,
            0.1,
            15,
            true,
        );
        scales[j] = s;
        mins[j] = m;
        if s > max_scale {
            max_scale = s;
        }
        if m > max_min {
            max_min = m;
        }
    }
    let (sc, rest) = b.split_at_mut(16);
    if max_scale > 0.0 {
        let iscale = Q4SCALE / max_scale;
        for j in 0..16 {
            sc[j] = nearest_int(iscale * scales[j]) as u8;
        }
        put_f16(rest, 64, max_scale / Q4SCALE);
    } else {
        sc.iter_mut().for_each(|s| *s = 0);
        put_f16(rest, 64, 0.0);
    }
    if max_min > 0.0 {
        let iscale = Q4SCALE / max_min;
        for j in 0..16 {
            sc[j] |= (nearest_int(iscale * mins[j]) << 4) as u8;
        }
        put_f16(rest, 66, max_min / Q4SCALE);
    } else {
        put_f16(rest, 66, 0.0);
    }
    let d_all = f16_to_f32(u16::from_le_bytes([rest[64], rest[65]]));
    let m_all = f16_to_f32(u16::from_le_bytes([rest[66], rest[67]]));
    for j in 0..16 {
        let d = d_all * f32::from(sc[j] & 0xF);
        if d == 0.0 {
            continue;
        }
        let dm = m_all * f32::from(sc[j] >> 4);
        for ii in 0..16 {
            l[16 * j + ii] = nearest_int((x[16 * j + ii] + dm) / d).clamp(0, 3) as u8;
        }
    }
    pack_2bit(&l, &mut rest[..64]);
}

pub(crate) fn quant_q3_k(x: &[f32], b: &mut [u8]) {
    let mut l = [0i8; QK_K];
    let mut scales = [0f32; 16];
    let (mut amax, mut max_scale) = (0.0f32, 0.0f32);
    for j in 0..16 {
        scales[j] = make_q3_quants(4, &x[16 * j..16 * j + 16], &mut l[16 * j..16 * j + 16]);
        let s = scales[j].abs();
        if s > amax {
            amax = s;
            max_scale = scales[j];
        }
    }
    let (hmask, rest) = b.split_at_mut(32);
    let (qs, rest) = rest.split_at_mut(64);
    let (sc, d_bytes) = rest.split_at_mut(12);
    sc.iter_mut().for_each(|s| *s = 0);
    if max_scale != 0.0 {
        let iscale = -32.0 / max_scale;
        for j in 0..16 {
            let l8 = nearest_int(iscale * scales[j]) as i8;
            let v = (i32::from(l8).clamp(-32, 31) + 32) as u8;
            if j < 8 {
                sc[j] = v & 0xF;
            } else {
                sc[j - 8] |= (v & 0xF) << 4;
            }
            sc[j % 4 + 8] |= (v >> 4) << (2 * (j / 4));
        }
        d_bytes.copy_from_slice(&f32_to_f16(1.0 / iscale).to_le_bytes());
    } else {
        d_bytes.copy_from_slice(&f32_to_f16(0.0).to_le_bytes());
    }
    let d_all = f16_to_f32(u16::from_le_bytes([d_bytes[0], d_bytes[1]]));
    let unpacked = super::kquants::q3k_scales(sc);
    for j in 0..16 {
        let d = d_all * f32::from(unpacked[j]);
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            l[16 * j + ii] = (nearest_int(x[16 * j + ii] / d).clamp(-4, 3) + 4) as i8;
        }
    }
    hmask.iter_mut().for_each(|h| *h = 0);
    let (mut m, mut hm) = (0usize, 1u8);
    let mut lu = [0u8; QK_K];
    for j in 0..QK_K {
        let mut v = l[j] as u8;
        if l[j] > 3 {
            hmask[m] |= hm;
            v -= 4;
        }
        lu[j] = v;
        m += 1;
        if m == QK_K / 8 {
            m = 0;
            hm <<= 1;
        }
    }
    pack_2bit(&lu, qs);
}

/// Q4_K and Q5_K share everything but the bit width and the packing.
fn quant_q45_k(x: &[f32], b: &mut [u8], nmax: i32, rmin: f32, nstep: i32) -> [u8; QK_K] {
    let mut l = [0u8; QK_K];
    let mut scales = [0f32; 8];
    let mut mins = [0f32; 8];
    let (mut max_scale, mut max_min) = (0.0f32, 0.0f32);
    for j in 0..8 {
        let xs = &x[32 * j..32 * j + 32];
        let mut sum_x2 = 0.0f32;
        for v in xs {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        let mut weights = [0f32; 32];
        for (w, v) in weights.iter_mut().zip(xs) {
            *w = av_x + v.abs();
        }
        let (s, m) = make_qkx2_quants(
            nmax,
            xs,
            &weights,
            &mut l[32 * j..32 * j + 32],
            rmin,
            0.1,
            nstep,
            false,
        );
        scales[j] = s;
        mins[j] = m;
        if s > max_scale {
            max_scale = s;
        }
        if m > max_min {
            max_min = m;
        }
    }
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let sc = &mut b[4..16];
    for j in 0..8 {
        let ls = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        let lm = (nearest_int(inv_min * mins[j]) as u8).min(63);
        if j < 4 {
            sc[j] = ls;
            sc[j + 4] = lm;
        } else {
            sc[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
            sc[j - 4] |= (ls >> 4) << 6;
            sc[j] |= (lm >> 4) << 6;
        }
    }
    put_f16(b, 0, max_scale / 63.0);
    put_f16(b, 2, max_min / 63.0);
    let d_all = f16_to_f32(u16::from_le_bytes([b[0], b[1]]));
    let m_all = f16_to_f32(u16::from_le_bytes([b[2], b[3]]));
    for j in 0..8 {
        let (sc, m) = scale_min_k4(j, &b[4..16]);
        let d = d_all * f32::from(sc);
        if d == 0.0 {
            continue;
        }
        let dm = m_all * f32::from(m);
        for ii in 0..32 {
            l[32 * j + ii] = nearest_int((x[32 * j + ii] + dm) / d).clamp(0, nmax) as u8;
        }
    }
    l
}

pub(crate) fn quant_q4_k(x: &[f32], b: &mut [u8]) {
    let l = quant_q45_k(x, b, 15, -1.0, 20);
    let qs = &mut b[16..144];
    for (c, j) in (0..QK_K).step_by(64).enumerate() {
        for k in 0..32 {
            qs[c * 32 + k] = l[j + k] | (l[j + k + 32] << 4);
        }
    }
}

pub(crate) fn quant_q5_k(x: &[f32], b: &mut [u8]) {
    let l = quant_q45_k(x, b, 31, -0.5, 15);
    let (qh, ql) = b[16..176].split_at_mut(32);
    qh.iter_mut().for_each(|h| *h = 0);
    let (mut m1, mut m2) = (1u8, 2u8);
    for (c, n) in (0..QK_K).step_by(64).enumerate() {
        for j in 0..32 {
            let mut l1 = l[n + j];
            if l1 > 15 {
                l1 -= 16;
                qh[j] |= m1;
            }
            let mut l2 = l[n + j + 32];
            if l2 > 15 {
                l2 -= 16;
                qh[j] |= m2;
            }
            ql[c * 32 + j] = l1 | (l2 << 4);
        }
        m1 <<= 2;
        m2 <<= 2;
    }
}

pub(crate) fn quant_q6_k(x: &[f32], b: &mut [u8]) {
    let mut l = [0i8; QK_K];
    let mut scales = [0f32; 16];
    let (mut max_scale, mut max_abs_scale) = (0.0f32, 0.0f32);
    for ib in 0..16 {
        let s = make_qx_quants(32, &x[16 * ib..16 * ib + 16], &mut l[16 * ib..16 * ib + 16]);
        scales[ib] = s;
        if s.abs() > max_abs_scale {
            max_abs_scale = s.abs();
            max_scale = s;
        }
    }
    if max_abs_scale < GROUP_MAX_EPS {
        b.iter_mut().for_each(|v| *v = 0);
        return;
    }
    let iscale = -128.0 / max_scale;
    put_f16(b, 208, 1.0 / iscale);
    for ib in 0..16 {
        b[192 + ib] = nearest_int(iscale * scales[ib]).min(127) as i8 as u8;
    }
    let d_all = f16_to_f32(u16::from_le_bytes([b[208], b[209]]));
    for j in 0..16 {
        let d = d_all * f32::from(b[192 + j] as i8);
        if d == 0.0 {
            continue;
        }
        for ii in 0..16 {
            l[16 * j + ii] = (nearest_int(x[16 * j + ii] / d).clamp(-32, 31) + 32) as i8;
        }
    }
    let l: Vec<u8> = l.iter().map(|&v| v as u8).collect();
    for (n, j) in (0..QK_K).step_by(128).enumerate() {
        let (ql, qh) = (n * 64, 128 + n * 32);
        for k in 0..32 {
            let q1 = l[j + k] & 0xF;
            let q2 = l[j + k + 32] & 0xF;
            let q3 = l[j + k + 64] & 0xF;
            let q4 = l[j + k + 96] & 0xF;
            b[ql + k] = q1 | (q3 << 4);
            b[ql + k + 32] = q2 | (q4 << 4);
            b[qh + k] = (l[j + k] >> 4)
                | ((l[j + k + 32] >> 4) << 2)
                | ((l[j + k + 64] >> 4) << 4)
                | ((l[j + k + 96] >> 4) << 6);
        }
    }
}

pub(crate) fn quant_q8_k(x: &[f32], b: &mut [u8]) {
    let (amax, max) = signed_absmax(x);
    if amax == 0.0 {
        b.iter_mut().for_each(|v| *v = 0);
        return;
    }
    let iscale = -127.0 / max;
    let mut qs = [0i8; QK_K];
    for (q, &v) in qs.iter_mut().zip(x) {
        *q = nearest_int(iscale * v).min(127) as i8;
    }
    for (j, q) in qs.iter().enumerate() {
        b[4 + j] = *q as u8;
    }
    for j in 0..16 {
        let sum: i32 = qs[j * 16..j * 16 + 16].iter().map(|&q| i32::from(q)).sum();
        b[260 + 2 * j..262 + 2 * j].copy_from_slice(&(sum as i16).to_le_bytes());
    }
    b[0..4].copy_from_slice(&(1.0 / iscale).to_le_bytes());
}
