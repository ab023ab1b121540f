#!/usr/bin/env python3
"""Reference trajectories for rlx-tensor's `train_step`, from JAX (float64).

Re-run from the repository root:
    ~/.cache/rlx-ref/venv/bin/python tools/gen_tensor_train_step_fixtures.py
It writes crates/rlx-tensor/tests/fixtures/train_step.json: a 4-5-3 tanh
MLP with mean softmax cross-entropy on a fixed batch of 6, its initial
params, and after each of 5 steps the loss (before the update) and the
params, for SGD with momentum 0.9 and for Adam. Gradients are JAX's
`jax.grad`; the updates are written out in numpy from the PyTorch
documentation of `torch.optim.SGD` and `torch.optim.Adam`. The Rust test
crates/rlx-tensor/tests/train_step.rs runs the same steps with
`train_step` and compares.
"""
import json
import pathlib

import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np

rng = np.random.RandomState(2121)
x = rng.randn(6, 4)
labels = np.array([0, 1, 2, 1, 0, 2])
y = np.eye(3)[labels]
init = {
    "w1": rng.randn(4, 5) * 0.5,
    "b1": rng.randn(5) * 0.1,
    "w2": rng.randn(5, 3) * 0.5,
    "b2": rng.randn(3) * 0.1,
}
NAMES = ["w1", "b1", "w2", "b2"]
STEPS = 5


def loss_fn(p):
    h = jnp.tanh(x @ p["w1"] + p["b1"])
    z = h @ p["w2"] + p["b2"]
    return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(z, axis=-1), axis=-1))


value_and_grad = jax.jit(jax.value_and_grad(loss_fn))


def sgd(lr=0.1, momentum=0.9):
    buf = {}

    def update(name, p, g):
        b = g if name not in buf else momentum * buf[name] + g
        buf[name] = b
        return p - lr * b

    return update


def adam(lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m, v, t = {}, {}, {}

    def update(name, p, g):
        t[name] = t.get(name, 0) + 1
        m[name] = b1 * m.get(name, 0.0) + (1 - b1) * g
        v[name] = b2 * v.get(name, 0.0) + (1 - b2) * g * g
        mhat = m[name] / (1 - b1 ** t[name])
        vhat = v[name] / (1 - b2 ** t[name])
        return p - lr * mhat / (np.sqrt(vhat) + eps)

    return update


def trajectory(update):
    p = {k: jnp.asarray(v) for k, v in init.items()}
    steps = []
    for _ in range(STEPS):
        loss, g = value_and_grad(p)
        p = {k: jnp.asarray(update(k, np.asarray(p[k]), np.asarray(g[k]))) for k in NAMES}
        steps.append({"loss": float(loss), "params": {k: np.asarray(p[k]).ravel().tolist() for k in NAMES}})
    return steps


out = {
    "x": x.ravel().tolist(),
    "y": y.ravel().tolist(),
    "init": {k: v.ravel().tolist() for k, v in init.items()},
    "sgd": {"lr": 0.1, "momentum": 0.9, "steps": trajectory(sgd())},
    "adam": {"lr": 0.01, "betas": [0.9, 0.999], "eps": 1e-8, "steps": trajectory(adam())},
}
path = pathlib.Path("crates/rlx-tensor/tests/fixtures/train_step.json")
path.write_text(json.dumps(out, indent=1) + "\n")
print(f"wrote {path}")
