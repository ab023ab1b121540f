#!/usr/bin/env python3
"""Reference values for rlx-runtime's ship-graph tests (crates/rlx-runtime/tests/dist_*.rs).

- pipeline: a 3-layer MLP (tanh, tanh, linear) on a batch, in float64 numpy;
  the tests split it into 3 stages across ranks.
- train: data-parallel training of a 6-5-3 tanh MLP with mean softmax
  cross-entropy and torch-style SGD with momentum, in float64 numpy, on the
  global batch of each step (the tests run it on 1, 2 and 4 ranks).

Re-run: ~/.cache/rlx-ref/venv/bin/python tools/gen_dist_fixtures.py
(writes crates/rlx-runtime/tests/fixtures/dist.json).
"""
import json
import pathlib

import numpy as np

rng = np.random.default_rng(25)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def t(a):
    a = np.asarray(a)
    return {"dims": list(a.shape), "data": [float(v) for v in a.ravel()]}


# ---- pipeline: x[4,8] -> 8x6 tanh -> 6x5 tanh -> 5x3
pipe = {"x": f32(rng.standard_normal((4, 8)))}
for i, (a, b) in enumerate([(8, 6), (6, 5), (5, 3)], start=1):
    pipe[f"w{i}"] = f32(rng.standard_normal((a, b)) / np.sqrt(a))
    pipe[f"b{i}"] = f32(rng.standard_normal(b) * 0.1)
h = pipe["x"].astype(np.float64)
h = np.tanh(h @ pipe["w1"] + pipe["b1"])
h = np.tanh(h @ pipe["w2"] + pipe["b2"])
pipe_y = h @ pipe["w3"] + pipe["b3"]

# ---- training
N, D, H, C = 32, 6, 5, 3
MB, M, STEPS, LR, MOM = 2, 4, 6, 0.5, 0.9
x = f32(rng.standard_normal((N, D)))
labels = rng.integers(0, C, N)
y = f32(np.eye(C)[labels])
init = {
    "w1": f32(rng.standard_normal((D, H)) / np.sqrt(D)),
    "b1": f32(np.zeros(H)),
    "w2": f32(rng.standard_normal((H, C)) / np.sqrt(H)),
    "b2": f32(np.zeros(C)),
}
p = {k: v.astype(np.float64) for k, v in init.items()}
buf = {}
losses = []
B = MB * M
for step in range(STEPS):
    base = (step % (N // B)) * B
    xb, yb = x[base:base + B].astype(np.float64), y[base:base + B].astype(np.float64)
    a1 = xb @ p["w1"] + p["b1"]
    h1 = np.tanh(a1)
    z = h1 @ p["w2"] + p["b2"]
    z = z - z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=1, keepdims=True))
    logp = z - lse
    losses.append(float(-(yb * logp).sum() / B))
    dz = (np.exp(logp) - yb) / B
    g = {"w2": h1.T @ dz, "b2": dz.sum(0)}
    da1 = (dz @ p["w2"].T) * (1 - h1 ** 2)
    g["w1"] = xb.T @ da1
    g["b1"] = da1.sum(0)
    for k in p:  # torch.optim.SGD(momentum=MOM): buf = MOM*buf + g; p -= LR*buf
        buf[k] = g[k] if k not in buf else MOM * buf[k] + g[k]
        p[k] = p[k] - LR * buf[k]

out = {
    "pipeline": {**{k: t(v) for k, v in pipe.items()}, "y": t(pipe_y)},
    "train": {
        "x": t(x), "y": t(y),
        "init": {k: t(v) for k, v in init.items()},
        "micro_batch": MB, "micro_batches": M, "steps": STEPS, "lr": LR, "momentum": MOM,
        "losses": losses,
        "final": {k: t(v) for k, v in p.items()},
    },
}
path = pathlib.Path(__file__).resolve().parent.parent / "crates/rlx-runtime/tests/fixtures/dist.json"
path.write_text(json.dumps(out, indent=1) + "\n")
print("wrote", path)
