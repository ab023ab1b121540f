#!/usr/bin/env python3
"""Fixture of crates/rlx-cpu/tests/nchwc_chain.rs: a ResNet-style chain of
three 3x3 convs that the CPU executable keeps in the NCHWc blocked layout
between them, computed here with numpy in float64.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_nchwc_chain_fixtures.py

writes crates/rlx-cpu/tests/fixtures/conv_nchwc/chain.json.

  x  [2, 16, 9, 9], r [2, 16, 9, 9]          (inputs)
  y1 = relu(conv(x, w1) + b1)                 (graph output in case "two_outputs")
  y2 = relu(conv(y1, w2) + b2 + r)            (residual add, NCHW operand)
  y3 = conv(y2, w3) + b3                      (graph output)

Every conv 16 -> 16, stride 1, padding 1. Values are float32 made by
`values(n, seed)` below (the test computes the same in Rust: each step one
correctly rounded float32 operation).
"""
import json
import os

import numpy as np

N, C, HW = 2, 16, 9


def values(n, seed):
    """((i * 7919 + seed * 104729) % 1000) / 500 - 1, times 1/16, in float32."""
    k = (np.arange(n, dtype=np.int64) * 7919 + seed * 104729) % 1000
    v = k.astype(np.float32) / np.float32(500) - np.float32(1)
    return v * np.float32(0.0625)


def conv3x3(x, w, b):
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd))
    for ky in range(3):
        for kx in range(3):
            patch = xp[:, :, ky:ky + h, kx:kx + wd]
            y += np.einsum("nchw,oc->nohw", patch, w[:, :, ky, kx])
    return y + b[None, :, None, None]


def main():
    f64 = lambda a: a.astype(np.float64)
    x = f64(values(N * C * HW * HW, 1)).reshape(N, C, HW, HW) * 16
    r = f64(values(N * C * HW * HW, 2)).reshape(N, C, HW, HW) * 16
    ws = [f64(values(C * C * 9, 3 + i)).reshape(C, C, 3, 3) for i in range(3)]
    bs = [f64(values(C, 6 + i)) for i in range(3)]
    y1 = np.maximum(conv3x3(x, ws[0], bs[0]), 0)
    y2 = np.maximum(conv3x3(y1, ws[1], bs[1]) + r, 0)
    y3 = conv3x3(y2, ws[2], bs[2])
    out = {
        "shape": [N, C, HW, HW],
        "y1": [float("%.8g" % v) for v in y1.ravel()],
        "y3": [float("%.8g" % v) for v in y3.ravel()],
    }
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests",
                        "fixtures", "conv_nchwc", "chain.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
