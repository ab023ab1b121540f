#!/usr/bin/env python3
"""Fixtures of crates/rlx-cpu/tests/nchwc_concat.rs: a U-Net-like skip
whose channel concat the CPU executable keeps in the NCHWc blocked layout,
computed here with numpy in float64.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_nchwc_concat_fixtures.py

writes crates/rlx-cpu/tests/fixtures/conv_nchwc/concat_skip.json, keys
"n1" (batch 1: the concat joined in place) and "n2" (batch 2: copied).
conv3x3: 3x3, stride 1, padding 1; maxpool 2x2 stride 2, no padding
(13 x 11 -> 6 x 5):

  x   [n, 16, 13, 11]                         (input, values(.., 40) * 16)
  a   = relu(conv3x3(x, w0 [16, 16]) + b0)    (read by the pool, conv b, the concat)
  p   = maxpool(a)
  d   = conv3x3(p, w1 [32, 16]) + b1          (graph output: the down path)
  b   = relu(conv3x3(a, w2 [32, 16]) + b2)
  cat = concat(a, b) on channels              (48 channels; graph output in
                                               the test's NCHW variant)
  y   = conv3x3(cat, w3 [16, 48]) + b3        (graph output)

Weights / biases values(n, seed), seeds 41.. (weight then bias, in order).

It also writes crates/rlx-cpu/tests/fixtures/conv_nchwc/concat_up.json, keys
"n1" / "n2": a U-Net up step whose skip concat takes a 2x2 stride-2
ConvTranspose's output (up2: y[n, o, 2i + ky, 2j + kx] = sum_c x[n, c, i, j]
w[c, o, ky, kx] + b[o]):

  s   [n, 16, 6, 18]                           (input, values(.., 50) * 16)
  a   = relu(conv3x3(s, w0 [16, 16]) + b0)    (read by the pool and the concat)
  p   = maxpool(a)                            (3 x 9)
  d   = relu(conv3x3(p, w1 [32, 16]) + b1)
  u   = up2(d, wu [32, 32, 2, 2]) + bu        (6 x 18 from input rows of 9: two
                                               4-pixel tiles and a tail; graph
                                               output in the test's NCHW variant)
  cat = concat(a, u) on channels              (48 channels)
  y   = conv3x3(cat, w3 [16, 48]) + b3        (graph output)

seeds 51.. (w0, b0, w1, b1, wu, bu, w3, b3).
"""
import json
import os

import numpy as np

from gen_nchwc_chain_fixtures import conv3x3, maxpool, values

C, H, W = 16, 13, 11


def concat_skip(n):
    f64 = lambda a: a.astype(np.float64)
    x = f64(values(n * C * H * W, 40)).reshape(n, C, H, W) * 16
    seeds = iter(range(41, 49))

    def conv(v, o):
        c = v.shape[1]
        w = f64(values(o * c * 9, next(seeds))).reshape(o, c, 3, 3)
        return conv3x3(v, w, f64(values(o, next(seeds))))

    a = np.maximum(conv(x, 16), 0)
    p = maxpool(a, 2, 2, ((0, 0), (0, 0)))
    d = conv(p, 32)
    b = np.maximum(conv(a, 32), 0)
    cat = np.concatenate([a, b], axis=1)
    y = conv(cat, 16)
    g = lambda v: [float("%.8g" % e) for e in v.ravel()]
    return {"y": g(y), "d": g(d), "cat": g(cat)}


def up2(x, w, b):
    n, _, h, wd = x.shape
    o = w.shape[1]
    y = np.einsum("ncij,cokl->noikjl", x, w).reshape(n, o, 2 * h, 2 * wd)
    return y + b.reshape(1, o, 1, 1)


def concat_up(n):
    f64 = lambda a: a.astype(np.float64)
    s = f64(values(n * 16 * 6 * 18, 50)).reshape(n, 16, 6, 18) * 16
    seeds = iter(range(51, 59))
    param = lambda count: f64(values(count, next(seeds)))

    def conv(v, o):
        c = v.shape[1]
        w = param(o * c * 9).reshape(o, c, 3, 3)
        return conv3x3(v, w, param(o))

    a = np.maximum(conv(s, 16), 0)
    p = maxpool(a, 2, 2, ((0, 0), (0, 0)))
    d = np.maximum(conv(p, 32), 0)
    wu = param(32 * 32 * 4).reshape(32, 32, 2, 2)
    u = up2(d, wu, param(32))
    cat = np.concatenate([a, u], axis=1)
    y = conv(cat, 16)
    g = lambda v: [float("%.8g" % e) for e in v.ravel()]
    return {"y": g(y), "u": g(u)}


def main():
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests",
                        "fixtures", "conv_nchwc", "concat_skip.json")
    with open(path, "w") as f:
        json.dump({"n1": concat_skip(1), "n2": concat_skip(2)}, f, separators=(",", ":"))
        f.write("\n")
    with open(os.path.join(os.path.dirname(path), "concat_up.json"), "w") as f:
        json.dump({"n1": concat_up(1), "n2": concat_up(2)}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
