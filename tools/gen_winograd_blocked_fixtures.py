#!/usr/bin/env python3
"""Fixtures of the blocked Winograd F(4,3) conv
(crates/rlx-cpu/src/kernels/winograd_blocked.rs): 3x3 stride-1 convs with
padding 1, computed here as direct float64 loops (no Winograd), and the
float32 error of the F(4,3) scheme against them.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_winograd_blocked_fixtures.py

writes crates/rlx-cpu/tests/fixtures/winograd_blocked/cases.json (the
kernel alone) and crates/rlx-cpu/tests/fixtures/winograd_blocked/graph.json
(tests/winograd_blocked.rs: a small graph whose convs run the kernel
blocked on both sides), and prints the F(4,3) float32 error at 64 / 128 /
256 channels.

Inputs are formulas both sides compute (exact in float32):
  seq(n, a, m, scale)[i] = ((i * a) % m - m // 2) / scale
  x = seq(N*C*H*W, 7, 23, 8), w = seq(O*C*9, 5, 17, 16),
  b[o] = (o % 5 - 2) / 4, r = seq(N*O*H*W, 3, 13, 4)   (NCHW)
  y = conv(x, w) + b [+ r] [then relu]

Each case stores y (NCHW) and `mag`, the largest sum over an output of
|w x| + |b| + |r|: the kernel's tolerance is 2 * 190 * 2^-24 * mag
(F(4,3)'s error grows with ||A^T||_inf * ||B^T||_inf = 19 * 10).

graph.json: x [2, 64, 18, 15] (values seq(.., 7, 23, 8)), weights
seq(64*64*9, 5, 17, 16 * k) / bias as above, k = 1..4:
  c1 = relu(conv(x, w1) + b1)
  r1 = relu(conv(c1, w2) + b2 + x)
  c3 = relu(conv(r1, w3) + b3)
  r2 = relu(conv(c3, w4) + b4 + r1)
  g  = mean(r2, (2, 3))          [2, 64]
  q  = maxpool(r2, 3x3, stride 3) [2, 64, 6, 5]
"""

import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates/rlx-cpu/tests/fixtures/winograd_blocked")

# (name, n, c, o, h, w, bias, residual, relu)
CASES = [
    ("c16_o16_13x11", 1, 16, 16, 13, 11, True, True, True),
    ("c32_o32_7x9_b2", 2, 32, 32, 7, 9, True, True, True),
    ("c48_o16_5x3_b2", 2, 48, 16, 5, 3, True, False, True),
    ("c16_o32_8x8_plain", 1, 16, 32, 8, 8, False, False, False),
    # 256 channels: several runs of tiles per image (a part's V in L2).
    ("c256_o32_13x11", 1, 256, 32, 13, 11, True, True, True),
    # 5 output blocks: a group of 4 and a group of 1.
    ("c48_o80_9x13_b2", 2, 48, 80, 9, 13, True, True, True),
    # A weight past 16 MiB transformed: one run over both images' tiles.
    ("c512_o256_5x3_b2_wide", 2, 512, 256, 5, 3, True, True, True),
]


def seq(n, a, m, scale):
    i = np.arange(n, dtype=np.int64)
    return ((i * a) % m - m // 2).astype(np.float64) / scale


def conv3x3(x, w, b):
    """Direct float64 conv, stride 1, padding 1; also sum |w x|."""
    n, c, h, wd = x.shape
    o = w.shape[0]
    xp = np.zeros((n, c, h + 2, wd + 2))
    xp[:, :, 1:-1, 1:-1] = x
    y = np.zeros((n, o, h, wd))
    mag = np.zeros((n, o, h, wd))
    for ky in range(3):
        for kx in range(3):
            patch = xp[:, :, ky:ky + h, kx:kx + wd]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
            mag += np.einsum("nchw,oc->nohw", np.abs(patch), np.abs(w[:, :, ky, kx]))
    if b is not None:
        y += b[None, :, None, None]
        mag += np.abs(b)[None, :, None, None]
    return y, mag


def bias(o):
    return (np.arange(o) % 5 - 2) / 4.0


def case(name, n, c, o, h, w, has_bias, res, relu):
    x = seq(n * c * h * w, 7, 23, 8).reshape(n, c, h, w)
    wt = seq(o * c * 9, 5, 17, 16).reshape(o, c, 3, 3)
    y, mag = conv3x3(x, wt, bias(o) if has_bias else None)
    if res:
        r = seq(n * o * h * w, 3, 13, 4).reshape(n, o, h, w)
        y = y + r
        mag = mag + np.abs(r)
    if relu:
        y = np.maximum(y, 0)
    return {
        "name": name,
        "n": n,
        "c": c,
        "o": o,
        "h": h,
        "w": w,
        "bias": has_bias,
        "residual": res,
        "relu": relu,
        "mag": float(mag.max()),
        "y": [float("%.9g" % v) for v in y.ravel()],
    }


# F(4,3), points 0, 1, -1, 2, -2, infinity (as the kernel).
BT = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float64,
)
G = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ]
)
AT = np.array(
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    dtype=np.float64,
)


def winograd_f32(x, w):
    """F(4,3) in float32 (weights transformed in float64, then rounded),
    stride 1, padding 1, one image; an independent emulation to measure
    the scheme's error, not the kernel's code."""
    c, h, wd = x.shape
    o = w.shape[0]
    th, tw = -(-h // 4), -(-wd // 4)
    xp = np.zeros((c, th * 4 + 2, tw * 4 + 2), np.float32)
    xp[:, 1:h + 1, 1:wd + 1] = x
    u = np.einsum("ia,ocab,jb->ijoc", G, w, G).astype(np.float32)
    bt, at = BT.astype(np.float32), AT.astype(np.float32)
    y = np.zeros((o, th * 4, tw * 4), np.float32)
    for ty in range(th):
        for tx in range(tw):
            d = xp[:, ty * 4:ty * 4 + 6, tx * 4:tx * 4 + 6]
            v = np.einsum("ia,cab,jb->ijc", bt, d, bt).astype(np.float32)
            m = np.einsum("ijoc,ijc->ijo", u, v).astype(np.float32)
            y[:, ty * 4:ty * 4 + 4, tx * 4:tx * 4 + 4] = np.einsum(
                "ai,ijo,bj->oab", at, m, at
            )
    return y[:, :h, :wd]


def measure_error():
    rng = np.random.default_rng(7)
    for c, hw in ((64, 28), (128, 28), (256, 14)):
        x = rng.standard_normal((c, hw, hw)).astype(np.float32)
        w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
        ref, mag = conv3x3(x[None].astype(np.float64), w.astype(np.float64), None)
        got = winograd_f32(x, w)
        err = np.abs(got - ref[0])
        print(
            f"F(4,3) float32, {c} -> {c} at {hw}x{hw}: max |err| / max |y| = "
            f"{err.max() / np.abs(ref).max():.2e}, max |err| / mag = "
            f"{(err / mag[0]).max():.2e} (bound 2 * 190 * 2^-24 = {2 * 190 * 2.0 ** -24:.2e})"
        )


def graph():
    n, c, h, w = 2, 64, 18, 15
    x = seq(n * c * h * w, 7, 23, 8).reshape(n, c, h, w)

    def conv(v, k):
        wt = seq(c * c * 9, 5, 17, 16 * k).reshape(c, c, 3, 3)
        return conv3x3(v, wt, bias(c))[0]

    relu = lambda v: np.maximum(v, 0)
    c1 = relu(conv(x, 1))
    r1 = relu(conv(c1, 2) + x)
    c3 = relu(conv(r1, 3))
    r2 = relu(conv(c3, 4) + r1)
    g = r2.mean(axis=(2, 3))
    q = r2.reshape(n, c, 6, 3, 5, 3).max(axis=(3, 5))
    fmt = lambda a: [float("%.9g" % v) for v in a.ravel()]
    return {"g": fmt(g), "q": fmt(q)}


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = [case(*c) for c in CASES]
    with open(os.path.join(OUT, "cases.json"), "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":"))
    with open(os.path.join(OUT, "graph.json"), "w") as f:
        json.dump(graph(), f, separators=(",", ":"))
    measure_error()


if __name__ == "__main__":
    main()
