"""Reference outputs of a small MLP for the device-layer tests
(crates/rlx-runtime/tests/devices_*.rs), from numpy in float64.

Re-run (the reference venv of /work/shared/ref/setup.sh):

    ~/.cache/rlx-ref/venv/bin/python tools/gen_device_fixtures.py

writes crates/rlx-runtime/tests/fixtures/devices_mlp.json. The MLP is
relu(x @ w1 + b1) @ w2 + b2 with x [64, 256], w1 [256, 256], b1 [256],
w2 [256, 16], b2 [16]: large enough that the CPU backend splits its first
product over threads. Inputs are not stored: element i of a tensor with
seed s is ((i * 7919 + s * 104729) % 2001 - 1000) / 1024 * scale, exact
in float32, so the Rust test rebuilds them bit for bit (`pattern` there).
"""
import json
import os

import numpy as np

BATCH, D_IN, D_HIDDEN, D_OUT = 64, 256, 256, 16

# (name, shape, seed, scale): scales keep activations of order one.
TENSORS = [
    ("x", (BATCH, D_IN), 1, 1.0),
    ("w1", (D_IN, D_HIDDEN), 2, 1.0 / 16),
    ("b1", (D_HIDDEN,), 3, 0.5),
    ("w2", (D_HIDDEN, D_OUT), 4, 1.0 / 16),
    ("b2", (D_OUT,), 5, 0.5),
]


def pattern(shape, seed, scale):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    k = (i * 7919 + seed * 104729) % 2001 - 1000
    # Every step exact in float32: k / 1024 is, and the scales are powers of two.
    v = (k.astype(np.float32) / np.float32(1024)) * np.float32(scale)
    return v.reshape(shape)


def main():
    t = {name: pattern(shape, seed, scale) for name, shape, seed, scale in TENSORS}
    f64 = {k: v.astype(np.float64) for k, v in t.items()}
    h = np.maximum(f64["x"] @ f64["w1"] + f64["b1"], 0.0)
    y = h @ f64["w2"] + f64["b2"]
    out = {
        "about": "relu(x @ w1 + b1) @ w2 + b2 in float64; see tools/gen_device_fixtures.py",
        "tensors": [
            {"name": n, "shape": list(s), "seed": sd, "scale": sc}
            for n, s, sd, sc in TENSORS
        ],
        "x_checksum": float(f64["x"].sum()),
        "w1_checksum": float(f64["w1"].sum()),
        "y_shape": list(y.shape),
        "y": [float(v) for v in y.reshape(-1)],
    }
    path = os.path.join(
        os.path.dirname(__file__),
        "..",
        "crates/rlx-runtime/tests/fixtures/devices_mlp.json",
    )
    with open(path, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("wrote", os.path.normpath(path), y.shape, "max |y|", np.abs(y).max())


if __name__ == "__main__":
    main()
