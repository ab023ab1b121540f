#!/usr/bin/env python3
"""Reference outputs for rlx-runtime's heterogeneous-placement test.

A two-layer MLP, h = tanh(x @ w1 + b1), y = h @ w2, evaluated in float64
numpy on float32 data; written to crates/rlx-runtime/tests/fixtures/hetero_mlp.json.

Re-run: ~/.cache/rlx-ref/venv/bin/python tools/gen_hetero_fixtures.py
"""
import json
import pathlib

import numpy as np

rng = np.random.default_rng(25)
x = rng.standard_normal((3, 4)).astype(np.float32)
w1 = rng.standard_normal((4, 5)).astype(np.float32)
b1 = rng.standard_normal(5).astype(np.float32)
w2 = rng.standard_normal((5, 2)).astype(np.float32)
h = np.tanh(x.astype(np.float64) @ w1 + b1)
y = h @ w2

out = pathlib.Path(__file__).resolve().parent.parent / "crates/rlx-runtime/tests/fixtures/hetero_mlp.json"
out.write_text(json.dumps({
    "x": x.ravel().tolist(), "w1": w1.ravel().tolist(), "b1": b1.ravel().tolist(),
    "w2": w2.ravel().tolist(), "h": h.ravel().tolist(), "y": y.ravel().tolist(),
}, indent=1) + "\n")
print("wrote", out)
