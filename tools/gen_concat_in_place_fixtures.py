#!/usr/bin/env python3
"""Fixtures of crates/rlx-cpu/tests/concat_in_place.rs: channel concats the
memory plan joins in place (their parts written straight into the concat's
slot) and ones it must keep copying, computed with numpy in float64. The
weights, inputs, `cbs` (conv + bias + SiLU) and 5x5 max pool are
tools/gen_yolo_block_fixtures.py's.

    ~/.cache/rlx-ref/venv/bin/python tools/gen_concat_in_place_fixtures.py

writes crates/rlx-cpu/tests/fixtures/concat_in_place.json.

Keys (x: values(.., seed) * 16; weights values(.., seed) * 4 and biases
values(.., seed + 1), seeds in the order below; every concat on axis 1):

  csp_b1 / csp_b2   x [B, 16, 13, 15] (seed 200), weights from 201:
                    d = cbs(x, [32, 16, 3, 3], s 2); a = cbs(d, [16, 32, 1, 1]);
                    bb = cbs(d, [16, 32, 1, 1]); a = a + cbs(cbs(a, [16, 16, 1, 1]), [16, 16, 3, 3]);
                    y = cbs(concat(a, bb), [32, 32, 1, 1])
  sppf              x [1, 32, 9, 7] (seed 220), weights from 221:
                    s = cbs(x, [32, 32, 1, 1]); p1..p3 = chained maxpool5;
                    y = cbs(concat(s, p1, p2, p3), [32, 128, 1, 1])
  unet              x [1, 8, 12, 10] (seed 240), weights from 241:
                    skip = relu(conv3(x, [16, 8, 3, 3]) + b); p = maxpool 2x2 s2 (skip);
                    m = relu(conv3(p, [32, 16, 3, 3]) + b);
                    up = conv_transpose 2x2 s2 (m, [32, 16, 2, 2]) + b;
                    y = relu(conv3(concat(up, skip), [16, 32, 3, 3]) + b)
  input_part        x [1, 16, 6, 8] (seed 260), weights from 261:
                    a = cbs(x, [16, 16, 1, 1]); y = cbs(concat(x, a), [16, 32, 1, 1])
  two_concats       x [1, 16, 6, 8] (seed 280), weights from 281:
                    s = cbs(x, [16, 16, 1, 1]); a = cbs(s, [16, 16, 1, 1]); b = cbs(s, [16, 16, 3, 3]);
                    y1 = cbs(concat(s, a), [16, 32, 1, 1]); y2 = cbs(concat(s, b), [16, 32, 1, 1])

conv3: stride 1, pad 1; relu layers take weights / biases like cbs.
"""
import json
import os

import numpy as np

from gen_yolo_block_fixtures import Weights, conv, enc, f64, maxpool5, values


def image(shape, seed):
    return f64(values(int(np.prod(shape)), seed)).reshape(shape) * 16


class ReluWeights(Weights):
    """`Weights` with relu(conv + b) layers too (same seed order)."""

    def cbr(self, x, shape):
        w = f64(values(int(np.prod(shape)), self.seed)).reshape(shape) * 4
        b = f64(values(shape[0], self.seed + 1))
        self.seed += 2
        return np.maximum(conv(x, w, b, 1), 0)

    def up2(self, x, shape):
        """2x2 stride-2 transposed conv, weight [Cin, Cout, 2, 2], + bias."""
        w = f64(values(int(np.prod(shape)), self.seed)).reshape(shape) * 4
        b = f64(values(shape[1], self.seed + 1))
        self.seed += 2
        n, _, h, wd = x.shape
        y = np.zeros((n, shape[1], 2 * h, 2 * wd))
        for ky in range(2):
            for kx in range(2):
                y[:, :, ky::2, kx::2] = np.einsum("nchw,co->nohw", x, w[:, :, ky, kx])
        return y + b[None, :, None, None]


def out(*ys):
    return {"shape": list(ys[0].shape), "y": [enc(y) for y in ys]}


def csp(batch):
    x = image((batch, 16, 13, 15), 200)
    p = Weights(201)
    d = p.cbs(x, (32, 16, 3, 3), 2)
    a = p.cbs(d, (16, 32, 1, 1))
    bb = p.cbs(d, (16, 32, 1, 1))
    a = a + p.cbs(p.cbs(a, (16, 16, 1, 1)), (16, 16, 3, 3))
    return out(p.cbs(np.concatenate([a, bb], axis=1), (32, 32, 1, 1)))


def sppf():
    x = image((1, 32, 9, 7), 220)
    p = Weights(221)
    pools = [p.cbs(x, (32, 32, 1, 1))]
    for _ in range(3):
        pools.append(maxpool5(pools[-1]))
    return out(p.cbs(np.concatenate(pools, axis=1), (32, 128, 1, 1)))


def unet():
    x = image((1, 8, 12, 10), 240)
    p = ReluWeights(241)
    skip = p.cbr(x, (16, 8, 3, 3))
    pooled = skip.reshape(1, 16, 6, 2, 5, 2).max(axis=(3, 5))
    m = p.cbr(pooled, (32, 16, 3, 3))
    up = p.up2(m, (32, 16, 2, 2))
    return out(p.cbr(np.concatenate([up, skip], axis=1), (16, 32, 3, 3)))


def input_part():
    x = image((1, 16, 6, 8), 260)
    p = Weights(261)
    a = p.cbs(x, (16, 16, 1, 1))
    return out(p.cbs(np.concatenate([x, a], axis=1), (16, 32, 1, 1)))


def two_concats():
    x = image((1, 16, 6, 8), 280)
    p = Weights(281)
    s = p.cbs(x, (16, 16, 1, 1))
    a = p.cbs(s, (16, 16, 1, 1))
    b = p.cbs(s, (16, 16, 3, 3))
    y1 = p.cbs(np.concatenate([s, a], axis=1), (16, 32, 1, 1))
    y2 = p.cbs(np.concatenate([s, b], axis=1), (16, 32, 1, 1))
    return out(y1, y2)


def main():
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests",
                        "fixtures", "concat_in_place.json")
    fixtures = {"csp_b1": csp(1), "csp_b2": csp(2), "sppf": sppf(), "unet": unet(),
                "input_part": input_part(), "two_concats": two_concats()}
    with open(path, "w") as f:
        json.dump(fixtures, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
