#!/usr/bin/env python3
"""Fixture for rlx-cpu's small-row product kernel (`kernels/small_rows.rs`): the attention
products of a decode step, one to four query rows against a KV cache, in float64 numpy.

Run (from the repository root):
    ~/.cache/rlx-ref/venv/bin/python tools/gen_small_rows_fixture.py
writes crates/rlx-cpu/tests/fixtures/small_rows.json.

Each case: `a` [m, k] (query rows, or softmax probabilities), `keys` [n, k] and `values` [k, n]
(row-major float32 values); `scores` = a @ keys.T and `out` = a @ values, computed in float64
from the float32 operands. Shapes cover head_dim 64 against cache lengths 1..257 and depths
that leave tails of the kernels' 8-wide / 16-wide blocks.
"""
import json
import os

import numpy as np

CASES = [
    (1, 64, 1), (3, 64, 24), (3, 64, 35), (4, 64, 18), (2, 64, 17),
    (3, 7, 5), (4, 13, 33), (1, 1, 1), (2, 130, 9), (4, 9, 35),
]


def f32(rng, shape):
    # Multiples of 1/64 in [-2, 2]: exact in float32 and short in JSON.
    return (rng.integers(-128, 129, shape) / 64.0).astype(np.float32)


def main():
    rng = np.random.default_rng(28)
    cases = []
    for m, k, n in CASES:
        a, keys, values = f32(rng, (m, k)), f32(rng, (n, k)), f32(rng, (k, n))
        a64 = a.astype(np.float64)
        cases.append({
            "mkn": [m, k, n],
            "a": a.ravel().tolist(),
            "keys": keys.ravel().tolist(),
            "values": values.ravel().tolist(),
            "scores": (a64 @ keys.astype(np.float64).T).ravel().tolist(),
            "out": (a64 @ values.astype(np.float64)).ravel().tolist(),
        })
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests",
                        "fixtures", "small_rows.json")
    with open(path, "w") as f:
        json.dump({"generator": "tools/gen_small_rows_fixture.py", "cases": cases}, f)
    print("wrote", os.path.normpath(path))


if __name__ == "__main__":
    main()
