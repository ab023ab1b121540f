#!/usr/bin/env python3
"""Reference values for the `rlx!` language's value tests, from numpy (float64).

Re-run from the repository root:
    ~/.cache/rlx-ref/venv/bin/python tools/gen_rlx_lang_fixtures.py
It writes crates/rlx-tensor/tests/fixtures/rlx_lang.json: for each case its
dims bindings, inputs / params (seeded numpy draws, rounded to f32) and the
outputs numpy computes. crates/rlx-tensor/tests/rlx_lang.rs writes the same
programs with `rlx!`, compiles them on the CPU and compares.
"""
import json
import pathlib

import numpy as np
from scipy.special import erf

rng = np.random.RandomState(2121)


def draw(*shape, scale=1.0):
    return (rng.randn(*shape) * scale).astype(np.float32).astype(np.float64)


def softmax(z, axis=-1):
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(z, axis=-1):
    m = z.max(axis=axis, keepdims=True)
    return z - m - np.log(np.exp(z - m).sum(axis=axis, keepdims=True))


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def mlp():
    b, hidden = 3, 8
    x = rng.uniform(0, 1, size=(b, 784)).astype(np.float32).astype(np.float64)
    labels = np.array([3, 0, 9])
    y = np.eye(10)[labels]
    p = {
        "w1": draw(784, hidden, scale=0.05),
        "b1": draw(hidden, scale=0.1),
        "w2": draw(hidden, 10, scale=0.3),
        "b2": draw(10, scale=0.1),
    }
    h = np.maximum(x @ p["w1"] + p["b1"], 0)
    logits = h @ p["w2"] + p["b2"]
    loss = -(y * log_softmax(logits)).sum(-1).mean()
    return {
        "dims": {"B": b},
        "inputs": {"x": x, "y": y},
        "params": p,
        "outputs": {"probs": softmax(logits), "loss": np.array(loss), "hidden": h},
    }


def encoder():
    b, s, d, heads, ff = 2, 5, 16, 4, 32
    dh = d // heads
    x = draw(b, s, d)
    p = {}
    for n in ["q", "k", "v", "o"]:
        p["w" + n] = draw(d, d, scale=0.25)
        p["b" + n] = draw(d, scale=0.1)
    p["ln1_g"] = 1.0 + draw(d, scale=0.1)
    p["ln1_b"] = draw(d, scale=0.1)
    p["w_ff1"] = draw(d, ff, scale=0.25)
    p["b_ff1"] = draw(ff, scale=0.1)
    p["w_ff2"] = draw(ff, d, scale=0.18)
    p["b_ff2"] = draw(d, scale=0.1)
    p["ln2_g"] = 1.0 + draw(d, scale=0.1)
    p["ln2_b"] = draw(d, scale=0.1)

    def split(t):  # [B, S, D] -> [B, H, S, Dh]
        return t.reshape(b, s, heads, dh).transpose(0, 2, 1, 3)

    q = split(x @ p["wq"] + p["bq"])
    k = split(x @ p["wk"] + p["bk"])
    v = split(x @ p["wv"] + p["bv"])
    att = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh), -1)
    ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    a = layer_norm(x + ctx @ p["wo"] + p["bo"], p["ln1_g"], p["ln1_b"], 1e-12)
    f = gelu(a @ p["w_ff1"] + p["b_ff1"]) @ p["w_ff2"] + p["b_ff2"]
    out = layer_norm(a + f, p["ln2_g"], p["ln2_b"], 1e-12)
    return {
        "dims": {"B": b, "S": s},
        "inputs": {"x": x},
        "params": p,
        "outputs": {"y": out, "attn": att},
    }


def repeat():
    b, d = 3, 6
    x = draw(b, d)
    p = {}
    h = x
    for i in range(2):
        w, bias = draw(d, d, scale=0.4), draw(d, scale=0.1)
        p[f"layers.{i}.w"], p[f"layers.{i}.b"] = w, bias
        h = np.tanh(h @ w + bias)
    return {"dims": {"B": b}, "inputs": {"x": x}, "params": p, "outputs": {"h": h}}


def scan():
    t, n, d = 6, 4, 3
    xs = draw(t, n)
    seq = draw(t, d)
    h0 = draw(d)
    p = {"wh": draw(d, d, scale=0.5), "wx": draw(d, d, scale=0.5), "b": draw(d, scale=0.1)}
    c = np.zeros(n)
    sums = []
    for row in xs:
        c = c + row
        sums.append(c)
    h, hs = h0, []
    for row in seq:
        h = np.tanh(row @ p["wx"] + h @ p["wh"] + p["b"])
        hs.append(h)
    return {
        "dims": {},
        "inputs": {"xs": xs, "seq": seq, "h0": h0},
        "params": p,
        "outputs": {
            "total": c,
            "cumsum": np.stack(sums),
            "h": h,
            "hs": np.stack(hs),
            "numpy_cumsum": np.cumsum(xs, axis=0),
        },
    }


def enc(a):
    a = np.asarray(a, dtype=np.float64)
    return {"shape": list(a.shape), "data": [float(f"{v:.8g}") for v in a.ravel()]}


def main():
    cases = {"mlp": mlp(), "encoder": encoder(), "repeat": repeat(), "scan": scan()}
    out = {
        name: {
            "dims": c["dims"],
            **{
                k: {n: enc(v) for n, v in c[k].items()}
                for k in ["inputs", "params", "outputs"]
            },
        }
        for name, c in cases.items()
    }
    path = pathlib.Path("crates/rlx-tensor/tests/fixtures/rlx_lang.json")
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
