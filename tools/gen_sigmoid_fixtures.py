#!/usr/bin/env python3
"""numpy reference values of the logistic sigmoid and SiLU for rlx-cpu's vectorised forms
(crates/rlx-cpu/src/kernels/fastmath.rs: `sigmoid_f32`, `sigmoid_biased_f32`,
`silu_in_place_f32`; the last is the conv epilogue's fused SiLU).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_sigmoid_fixtures.py

Writes crates/rlx-cpu/tests/fixtures/cnn_ops/sigmoid.json (committed): "x_bits", the f32
inputs as their raw bits, and "sigmoid" / "silu",
1 / (1 + exp(-x)) and x / (1 + exp(-x)) in float64 (np.exp, independent of RLX's code). The
inputs cover -100 .. 100 coarsely, densely the negative tail where the result goes subnormal
and then 0 (-89 .. -86), the region of the largest relative error of a 2^(k/16) table
reduction (-32 .. -10), the saturation to 1 (10 .. 20), and single values: +-0, tiny ones,
+-88.5, +-1e4. 1603 values: the last vector of a 16-lane kernel is masked.
"""
import json
import os

import numpy as np

xs = np.concatenate(
    [
        np.linspace(-100.0, 100.0, 801),
        np.linspace(-89.0, -86.0, 241),
        np.linspace(-32.0, -10.0, 321),
        np.linspace(10.0, 20.0, 229),
        [0.0, -0.0, 1e-30, -3e-8, 88.5, -88.5, 1e4, -1e4, 87.0, -87.0, -88.0],
    ]
).astype(np.float32)
assert len(xs) % 16 != 0
x64 = xs.astype(np.float64)
with np.errstate(over="ignore"):
    sig = 1.0 / (1.0 + np.exp(-x64))
silu = x64 * sig


out = {
    "x_bits": [int(b) for b in xs.view(np.uint32)],
    "sigmoid": [float(v) for v in sig],
    "silu": [float(v) for v in silu],
}
path = os.path.join(
    os.path.dirname(__file__), "..", "crates", "rlx-cpu", "tests", "fixtures", "cnn_ops", "sigmoid.json"
)
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {path}: {len(xs)} values")
