#!/usr/bin/env python3
"""Fixtures of crates/rlx-cpu/tests/yolo_blocks.rs: the YOLO-style net's
blocks (tools/gen_cnn_bench_models.py's `yolo`) at odd sizes, batch 2,
computed with numpy in float64. Every conv is conv + bias + SiLU
(silu(v) = v * sigmoid(v)), the epilogue the NCHWc layout plan now runs on
blocked rows.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_yolo_block_fixtures.py

writes crates/rlx-cpu/tests/fixtures/conv_nchwc/yolo_blocks.json.

CSP block (key "csp"; cbs(x, w, k, s) = silu(conv(x, w, stride s, pad k // 2) + b)):

  x  [2, 16, 21, 25]                 (input, values(.., 90) * 16)
  d  = cbs(x, [32, 16, 3, 3], s 2)   (11 x 13)
  a0 = cbs(d, [16, 32, 1, 1])
  bb = cbs(d, [16, 32, 1, 1])
  a1 = a0 + cbs(cbs(a0, [16, 16, 1, 1]), [16, 16, 3, 3])   (residual bottleneck)
  a2 = a1 + cbs(cbs(a1, [16, 16, 1, 1]), [16, 16, 3, 3])
  y  = cbs(concat(a2, bb), [32, 32, 1, 1])                  (graph output)

SPPF block (key "sppf"):

  x  [2, 32, 9, 7]                   (input, values(.., 110) * 16)
  s  = cbs(x, [32, 32, 1, 1])
  p1 = maxpool5(s), p2 = maxpool5(p1), p3 = maxpool5(p2)   (5x5, stride 1, pad 2, -inf)
  y  = cbs(concat(s, p1, p2, p3), [32, 128, 1, 1])         (graph output)

Weights values(n, seed) * 4, biases values(n, seed + 1), in the order
above, seeds 91.. (csp) and 111.. (sppf).

SiLU over its range (key "silu"): x [1, 17, 7, 9] with
x[i] = (i - 535) * 11 / 64 (exact in float32, -91.95 .. 91.95 over the
flattened input), y = silu(conv(x, identity [17, 17, 1, 1]) + 0), i.e.
silu(x) of every value: the conv epilogue's SiLU pass on one block of
17 x 63 = 1071 values (a masked tail of 15).

Sigmoid over its range (key "sigmoid"): x [1, 2003] with
x[i] = (i - 1530) * 59 / 1024 (exact in float32, -88.15 .. 27.25: the
negative tail densely, a few values below -87 where float32 may flush),
y = 1 / (1 + exp(-x)): the elementwise Sigmoid op (and the first half of
the SiLU every conv runs) on 125 full vectors and a masked tail of 3.

SPPF pool with NaN (key "pool_nan"): x [1, 3, 7, 19] = values(.., 130) * 16
with NaN at flat indices 20, 150 and 398, y = maxpool5(x) (NaN sticks,
as numpy's maximum).
"""
import json
import os

import numpy as np


def values(n, seed):
    """((i * 7919 + seed * 104729) % 1000) / 500 - 1, times 1/16, in float32."""
    k = (np.arange(n, dtype=np.int64) * 7919 + seed * 104729) % 1000
    v = k.astype(np.float32) / np.float32(500) - np.float32(1)
    return v * np.float32(0.0625)


def f64(a):
    return a.astype(np.float64)


def conv(x, w, b, stride):
    n, c, h, wd = x.shape
    k = w.shape[2]
    pad = k // 2
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, w.shape[0], oh, ow))
    for ky in range(k):
        for kx in range(k):
            patch = xp[:, :, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return y + b[None, :, None, None]


def silu(v):
    return v / (1 + np.exp(-v))


class Weights:
    """values(..) weights / biases in seed order from `seed`."""

    def __init__(self, seed):
        self.seed = seed

    def cbs(self, x, shape, stride=1):
        w = f64(values(int(np.prod(shape)), self.seed)).reshape(shape) * 4
        b = f64(values(shape[0], self.seed + 1))
        self.seed += 2
        return silu(conv(x, w, b, stride))


def maxpool5(x):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), constant_values=-np.inf)
    y = np.full(x.shape, -np.inf)
    for ky in range(5):
        for kx in range(5):
            y = np.maximum(y, xp[:, :, ky:ky + h, kx:kx + w])
    return y


def enc(v):
    return [float("%.8g" % e) for e in v.ravel()]


def csp():
    x = f64(values(2 * 16 * 21 * 25, 90)).reshape(2, 16, 21, 25) * 16
    p = Weights(91)
    d = p.cbs(x, (32, 16, 3, 3), 2)
    a = p.cbs(d, (16, 32, 1, 1))
    bb = p.cbs(d, (16, 32, 1, 1))
    for _ in range(2):
        a = a + p.cbs(p.cbs(a, (16, 16, 1, 1)), (16, 16, 3, 3))
    y = p.cbs(np.concatenate([a, bb], axis=1), (32, 32, 1, 1))
    return {"shape": list(y.shape), "y": enc(y)}


def sppf():
    x = f64(values(2 * 32 * 9 * 7, 110)).reshape(2, 32, 9, 7) * 16
    p = Weights(111)
    s = p.cbs(x, (32, 32, 1, 1))
    pools = [s]
    for _ in range(3):
        pools.append(maxpool5(pools[-1]))
    y = p.cbs(np.concatenate(pools, axis=1), (32, 128, 1, 1))
    return {"shape": list(y.shape), "y": enc(y)}


def silu_range():
    x = (np.arange(17 * 7 * 9, dtype=np.float64) - 535) * 11 / 64
    y = silu(x).reshape(1, 17, 7, 9)
    return {"shape": list(y.shape), "y": enc(y)}


def sigmoid_range():
    x = (np.arange(2003, dtype=np.float64) - 1530) * 59 / 1024
    y = 1 / (1 + np.exp(-x))
    return {"shape": [1, 2003], "y": enc(y)}


def pool_nan():
    x = f64(values(3 * 7 * 19, 130)) * 16
    x[[20, 150, 398]] = np.nan
    y = maxpool5(x.reshape(1, 3, 7, 19))
    return {"shape": list(y.shape), "y": [None if np.isnan(e) else e for e in enc(y)]}


def main():
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests",
                        "fixtures", "conv_nchwc", "yolo_blocks.json")
    with open(path, "w") as f:
        json.dump({"csp": csp(), "sppf": sppf(), "silu": silu_range(),
                   "sigmoid": sigmoid_range(),
                   "pool_nan": pool_nan()}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
