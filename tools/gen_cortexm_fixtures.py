#!/usr/bin/env python3
"""Reference outputs for rlx-cortexm's int8 kernels and rlx-quant-int8's
multiplier / softmax-parameter computation, from a numpy re-implementation
of TFLite's integer reference kernels (tensorflow/lite/kernels/internal/
reference/integer_ops/*.h, common.h, softmax.h) and gemmlowp's fixedpoint.h.

The numpy side is written differently from the Rust kernels on purpose:
convolutions pad the input with its zero point and take whole windows in
int64 (the kernels skip padded taps and pair products for SMLAD); the
average pool rounds by sign and magnitude; the requantization runs
vectorised in int64. Softmax outputs are also checked here against a float
softmax (within 1/256: rounding, or 255/256 standing for 1) so the fixed-point port is anchored to
the real function.

Env: ~/.cache/rlx-ref/venv (numpy). Re-run from the repository root (fixed
seed, reproducible):

    ~/.cache/rlx-ref/venv/bin/python tools/gen_cortexm_fixtures.py

Writes crates/rlx-cortexm/tests/fixtures/kernels.json and
crates/rlx-quant-int8/tests/fixtures/quant_math.json.
"""
import json
import math
import os

import numpy as np

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
rng = np.random.default_rng(26)


def wrap32(x):
    x = np.asarray(x, dtype=np.int64)
    return ((x + 2**31) % 2**32) - 2**31


def trunc_div(a, d):
    a = np.asarray(a, dtype=np.int64)
    return np.sign(a) * (np.abs(a) // d)


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul on int64 arrays holding int32s."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == I32_MIN) & (b == I32_MIN)
    # a * b fits int64 except MIN*MIN, which is masked out.
    ab = np.where(overflow, 0, a * b)
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    high = trunc_div(ab + nudge, 1 << 31)
    return np.where(overflow, I32_MAX, high)


def rdbpot(x, exponent):
    """RoundingDivideByPOT (exponent may be an array)."""
    x = np.asarray(x, dtype=np.int64)
    exponent = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def mbqm(x, multiplier, shift):
    """MultiplyByQuantizedMultiplier, elementwise over broadcast arrays."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.where(shift > 0, shift, 0)
    right = np.where(shift > 0, 0, -shift)
    return rdbpot(srdhm(wrap32(np.asarray(x, dtype=np.int64) << left), multiplier), right)


def round_half_away(v):
    return math.floor(abs(v) + 0.5) * (1 if v >= 0 else -1)


def quantize_multiplier(m):
    """tflite::QuantizeMultiplier."""
    if m == 0.0:
        return 0, 0
    q, shift = math.frexp(m)
    q_fixed = round_half_away(q * (1 << 31))
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    if shift < -31:
        shift, q_fixed = 0, 0
    if shift > 30:
        shift, q_fixed = 30, (1 << 31) - 1
    return int(q_fixed), int(shift)


def finish(acc, mult, shift, out_zp, act_min, act_max):
    v = mbqm(acc, mult, shift) + out_zp
    return np.clip(v, act_min, act_max).astype(np.int64)


def rand_i8(*shape, lo=-128, hi=127):
    return rng.integers(lo, hi + 1, size=shape, dtype=np.int64)


def channel_quant(n, lo=1e-4, hi=0.9):
    reals = np.exp(rng.uniform(np.log(lo), np.log(hi), size=n))
    pairs = [quantize_multiplier(float(r)) for r in reals]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def ints(a):
    return [int(v) for v in np.asarray(a).reshape(-1)]


# ---------------------------------------------------------------- kernels

def dense_ref(x, w, bias, in_zp, out_zp, mult, shift, act):
    acc = (x - in_zp) @ w.T + bias
    return finish(acc, np.array(mult), np.array(shift), out_zp, *act)


def padded(x, pads, value):
    t, b, l, r = pads
    return np.pad(x, ((0, 0), (t, b), (l, r), (0, 0)), constant_values=value)


def windows(xp, kh, kw, sh, sw, oh, ow):
    """[N, oh, ow, kh, kw, C] view of every window."""
    n, _, _, c = xp.shape
    out = np.empty((n, oh, ow, kh, kw, c), dtype=np.int64)
    for oy in range(oh):
        for ox in range(ow):
            out[:, oy, ox] = xp[:, oy * sh:oy * sh + kh, ox * sw:ox * sw + kw, :]
    return out


def out_size(n, k, s, p0, p1):
    return (n + p0 + p1 - k) // s + 1


def conv_ref(x, w, bias, geom, in_zp, out_zp, mult, shift, act):
    kh, kw, sh, sw, pads = geom["k_h"], geom["k_w"], geom["stride_h"], geom["stride_w"], geom["pads"]
    n, h, wd, c = x.shape
    oh, ow = out_size(h, kh, sh, pads[0], pads[1]), out_size(wd, kw, sw, pads[2], pads[3])
    win = windows(padded(x, pads, in_zp) - in_zp, kh, kw, sh, sw, oh, ow)
    acc = np.einsum("nyxijc,oijc->nyxo", win, w) + bias
    return finish(acc, np.array(mult), np.array(shift), out_zp, *act)


def depthwise_ref(x, w, bias, geom, dm, in_zp, out_zp, mult, shift, act):
    kh, kw, sh, sw, pads = geom["k_h"], geom["k_w"], geom["stride_h"], geom["stride_w"], geom["pads"]
    n, h, wd, c = x.shape
    oh, ow = out_size(h, kh, sh, pads[0], pads[1]), out_size(wd, kw, sw, pads[2], pads[3])
    win = windows(padded(x, pads, in_zp) - in_zp, kh, kw, sh, sw, oh, ow)
    win = np.repeat(win, dm, axis=-1)  # output channel c*dm + m reads input c
    acc = np.einsum("nyxijo,ijo->nyxo", win, w) + bias
    return finish(acc, np.array(mult), np.array(shift), out_zp, *act)


def pool_ref(x, geom, kind, act):
    kh, kw, sh, sw, pads = geom["k_h"], geom["k_w"], geom["stride_h"], geom["stride_w"], geom["pads"]
    n, h, wd, c = x.shape
    oh, ow = out_size(h, kh, sh, pads[0], pads[1]), out_size(wd, kw, sw, pads[2], pads[3])
    valid = windows(padded(np.ones_like(x), pads, 0), kh, kw, sh, sw, oh, ow).astype(bool)
    win = windows(padded(x, pads, 0), kh, kw, sh, sw, oh, ow)
    if kind == "max":
        v = np.where(valid, win, -(10**9)).max(axis=(3, 4))
    else:
        s = np.where(valid, win, 0).sum(axis=(3, 4))
        cnt = valid.sum(axis=(3, 4))
        v = np.sign(s) * ((np.abs(s) + cnt // 2) // cnt)
    return np.clip(v, *act)


# ---------------------------------------------------------------- softmax

def sat_lshift(x, e):
    threshold = (1 << (31 - e)) - 1
    if x > threshold:
        return I32_MAX
    if x < -threshold:
        return I32_MIN
    return x << e


def smul(a, b):
    return int(srdhm(a, b))


def rdiv(x, e):
    return int(rdbpot(x, e))


def exp_quarter(a):
    x = a + (1 << 28)
    x2 = smul(x, x)
    x3 = smul(x2, x)
    x4 = smul(x2, x2)
    x4_over_4 = rdiv(x4, 2)
    poly = rdiv(smul(x4_over_4 + x3, 715827883) + x2, 1)
    return 1895147668 + smul(1895147668, x + poly)


def exp_neg(a):
    frac = 26
    quarter = 1 << (frac - 2)
    amq = (a & (quarter - 1)) - quarter
    result = exp_quarter(sat_lshift(amq, 5))
    remainder = amq - a
    for k, m in [(-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                 (2, 39332535), (3, 720401), (4, 242)]:
        if remainder & (1 << (frac + k)):
            result = smul(result, m)
    return I32_MAX if a == 0 else result


def one_over_one_plus_x(a):
    s = a + I32_MAX
    half = int(trunc_div(s + (1 if s >= 0 else -1), 2))  # RoundingHalfSum
    x = 1515870810 + smul(half, -1010580540)
    for _ in range(3):
        x = x + sat_lshift(smul(x, (1 << 29) - smul(half, x)), 2)
    return sat_lshift(x, 1)


def softmax_params(beta, input_scale):
    """PreprocessSoftmaxScaling + CalculateInputRadius (5 integer bits)."""
    real = min(beta * input_scale * (1 << 26), (1 << 31) - 1.0)
    mult, shift = quantize_multiplier(real)
    assert shift >= 0
    radius = math.floor(((1 << 5) - 1) * (1 << 26) / (1 << shift))
    return mult, shift, -radius


def softmax_ref(row, mult, left, diff_min):
    mx = max(row)
    scaled = lambda d: smul(int(wrap32(d << left)), mult)
    total = 0
    for v in row:
        d = v - mx
        if d >= diff_min:
            total += rdiv(exp_neg(scaled(d)), 12)
    headroom = 32 - total.bit_length()  # clz of a positive int32
    nbou = 12 - headroom
    shifted = int(wrap32(((total << headroom) & 0xFFFFFFFF) - (1 << 31)))
    scale = one_over_one_plus_x(shifted)
    out = []
    for v in row:
        d = v - mx
        if d >= diff_min:
            e = nbou + 31 - 8
            unsat = 0 if e > 31 else rdiv(smul(scale, exp_neg(scaled(d))), e)
            out.append(max(-128, min(127, unsat - 128)))
        else:
            out.append(-128)
    return out


# ---------------------------------------------------------------- cases

def qcase(units, out_zp, relu, hi=0.9):
    mult, shift = channel_quant(units, hi=hi)
    act = (out_zp, 127) if relu else (-128, 127)
    return mult, shift, act


def dense_cases():
    cases = []
    for batch, depth, units, in_zp, out_zp, relu, hi in [
        (1, 1, 1, 0, 0, False, 0.9),
        (3, 7, 5, -128, 5, False, 0.02),
        (2, 64, 10, 127, -3, False, 0.01),
        (1, 33, 9, -7, -128, True, 0.05),
        (4, 16, 3, 13, 0, False, 4.0),  # multipliers > 1: saturates
    ]:
        x = rand_i8(batch, depth)
        w = rand_i8(units, depth, lo=-127)
        bias = rng.integers(-20000, 20000, size=units)
        mult, shift, act = qcase(units, out_zp, relu, hi)
        y = dense_ref(x, w, bias, in_zp, out_zp, mult, shift, act)
        cases.append(dict(batch=batch, depth=depth, units=units, input=ints(x), weights=ints(w),
                          bias=ints(bias), input_zero_point=in_zp, output_zero_point=out_zp,
                          activation=list(act), multiplier=mult, shift=shift, expected=ints(y)))
    return cases


def geom_dict(h, w, c, oc, kh, kw, sh, sw, pads):
    return dict(in_h=h, in_w=w, in_c=c, out_c=oc, k_h=kh, k_w=kw, stride_h=sh, stride_w=sw,
                pads=list(pads))


CONV_GEOMS = [
    # (batch, h, w, c, oc, kh, kw, sh, sw, (top, bottom, left, right))
    (1, 8, 8, 1, 8, 3, 3, 1, 1, (1, 1, 1, 1)),
    (2, 5, 7, 3, 5, 3, 3, 2, 2, (1, 0, 0, 1)),
    (1, 6, 5, 5, 3, 3, 2, 1, 2, (0, 2, 1, 0)),
    (1, 4, 4, 8, 16, 3, 3, 1, 1, (2, 2, 2, 2)),
    (1, 7, 6, 2, 3, 5, 3, 3, 1, (4, 0, 0, 2)),
    (1, 3, 3, 9, 1, 1, 1, 1, 1, (0, 0, 0, 0)),
]


def conv_cases():
    cases = []
    for i, (n, h, w, c, oc, kh, kw, sh, sw, pads) in enumerate(CONV_GEOMS):
        g = geom_dict(h, w, c, oc, kh, kw, sh, sw, pads)
        x = rand_i8(n, h, w, c)
        wt = rand_i8(oc, kh, kw, c, lo=-127)
        bias = rng.integers(-30000, 30000, size=oc)
        in_zp = [0, -128, 127, -17, 9, 3][i]
        out_zp = [0, 4, -9, -128, 100, -1][i]
        mult, shift, act = qcase(oc, out_zp, i % 2 == 1, hi=[0.01, 0.003, 0.02, 0.002, 3.0, 0.05][i])
        y = conv_ref(x, wt, bias, g, in_zp, out_zp, mult, shift, act)
        cases.append(dict(batch=n, geometry=g, input=ints(x), weights=ints(wt), bias=ints(bias),
                          input_zero_point=in_zp, output_zero_point=out_zp, activation=list(act),
                          multiplier=mult, shift=shift, expected=ints(y)))
    return cases


def depthwise_cases():
    cases = []
    for i, (n, h, w, c, dm, kh, kw, sh, sw, pads) in enumerate([
        (1, 8, 8, 3, 1, 3, 3, 1, 1, (1, 1, 1, 1)),
        (2, 5, 6, 3, 2, 3, 3, 2, 1, (0, 1, 2, 0)),
        (1, 4, 5, 1, 5, 2, 3, 1, 2, (1, 0, 1, 2)),
        (1, 6, 6, 7, 1, 5, 5, 1, 1, (2, 2, 2, 2)),
    ]):
        oc = c * dm
        g = geom_dict(h, w, c, oc, kh, kw, sh, sw, pads)
        x = rand_i8(n, h, w, c)
        wt = rand_i8(kh, kw, oc, lo=-127)
        bias = rng.integers(-5000, 5000, size=oc)
        in_zp, out_zp = [-128, 5, 127, -30][i], [3, -128, 0, 60][i]
        mult, shift, act = qcase(oc, out_zp, i == 1, hi=[0.01, 0.05, 2.0, 0.004][i])
        y = depthwise_ref(x, wt, bias, g, dm, in_zp, out_zp, mult, shift, act)
        cases.append(dict(batch=n, geometry=g, depth_multiplier=dm, input=ints(x), weights=ints(wt),
                          bias=ints(bias), input_zero_point=in_zp, output_zero_point=out_zp,
                          activation=list(act), multiplier=mult, shift=shift, expected=ints(y)))
    return cases


def pool_cases():
    cases = []
    for i, (n, h, w, c, kh, kw, sh, sw, pads) in enumerate([
        (1, 8, 8, 8, 2, 2, 2, 2, (0, 0, 0, 0)),
        (2, 5, 7, 3, 3, 3, 2, 2, (1, 1, 1, 1)),
        (1, 6, 5, 5, 3, 2, 1, 2, (2, 0, 1, 0)),
        (1, 4, 4, 1, 3, 3, 1, 1, (0, 2, 0, 2)),
    ]):
        g = geom_dict(h, w, c, c, kh, kw, sh, sw, pads)
        x = rand_i8(n, h, w, c)
        act = [(-128, 127), (-5, 127), (-128, 40), (0, 10)][i]
        for kind in ["max", "avg"]:
            y = pool_ref(x, g, kind, act)
            cases.append(dict(kind=kind, batch=n, geometry=g, input=ints(x), activation=list(act),
                              expected=ints(y)))
    return cases


def softmax_cases():
    cases = []
    for classes, rows, scale, beta in [(10, 6, 0.1, 1.0), (1, 2, 0.05, 1.0), (3, 4, 1.0, 1.0),
                                       (33, 3, 0.02, 2.0), (10, 3, 0.25, 0.5), (600, 1, 0.0001, 1.0)]:
        x = rand_i8(rows, classes)
        x[0, :] = x[0, 0]  # a row of ties
        if classes > 2:
            x[-1, 0], x[-1, 1] = 127, -128
        mult, left, diff_min = softmax_params(beta, scale)
        y = np.array([softmax_ref([int(v) for v in r], mult, left, diff_min) for r in x])
        z = beta * scale * x.astype(np.float64)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        deq = (y + 128) / 256.0
        err = np.abs(deq - p).max()
        assert err <= 1 / 256 + 1e-9, f"fixed-point softmax off by {err}"
        cases.append(dict(classes=classes, input_scale=scale, beta=beta, input=ints(x),
                          input_multiplier=mult, input_left_shift=left, diff_min=diff_min,
                          expected=ints(y)))
    return cases


def mbqm_cases():
    xs = [I32_MIN, I32_MIN + 1, -(2**30), -12345, -1, 0, 1, 7, 99999, 2**30, I32_MAX]
    xs += ints(rng.integers(I32_MIN, I32_MAX, size=8, endpoint=True))
    ms = [0, 1, 2**30, 1518500250, I32_MAX, I32_MIN, -(2**30)]
    ms += ints(rng.integers(2**30, 2**31 - 1, size=3))
    out = []
    for shift in [-31, -20, -8, -1, 0, 1, 3, 30]:
        for x in xs:
            for m in ms:
                out.append([x, m, shift, int(mbqm(x, m, shift))])
    return out


def quantize_multiplier_cases():
    reals = [0.0, 1.0, 0.5, 0.25, 2.0, 3.0, 1e-12, 2.0**-32, 2.0**-31 * 0.75, 1 - 2.0**-40,
             0.5 * (1 - 2.0**-33), 1e10, 2.0**31, 0.1, 1.0 / 3]
    reals += [float(v) for v in np.exp(rng.uniform(np.log(1e-9), np.log(100.0), size=60))]
    return [[r, *quantize_multiplier(r)] for r in reals]


def main():
    kernels = dict(mbqm=mbqm_cases(), dense=dense_cases(), conv2d=conv_cases(),
                   depthwise=depthwise_cases(), pool=pool_cases(), softmax=softmax_cases())
    x = rand_i8(37)
    kernels["relu"] = dict(input=ints(x), zero_point=-20, expected=ints(np.maximum(x, -20)))
    rows = rand_i8(6, 10)
    rows[1, 3] = rows[1, 7] = 127  # a tie: the first index wins
    kernels["argmax"] = dict(classes=10, input=ints(rows), expected=ints(np.argmax(rows, axis=1)))
    sm = [[s, b, *softmax_params(b, s)] for s, b in [(0.1, 1.0), (0.05, 1.0), (1.0, 1.0),
                                                       (0.02, 2.0), (0.25, 0.5), (0.0001, 1.0),
                                                       (3.9, 1.0), (1e-6, 1.0)]]
    quant = dict(quantize_multiplier=quantize_multiplier_cases(), softmax_params=sm)
    for path, data in [("crates/rlx-cortexm/tests/fixtures/kernels.json", kernels),
                       ("crates/rlx-quant-int8/tests/fixtures/quant_math.json", quant)]:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(data, f, separators=(",", ":"))
        print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
