#!/usr/bin/env python3
"""numpy references for the HIR blocks lowered by ``rlx_ir::HirModule``.

Writes ``crates/rlx-runtime/tests/fixtures/hir_blocks.json``, read by
``crates/rlx-runtime/tests/hir_blocks.rs``: a post-norm BERT encoder layer
(with an additive attention bias) and a pre-norm llama decoder layer
(causal attention, RMS norm, SwiGLU), each with its weights (named as the
HIR lowering names its params), input and float64-computed output.

Environment: the reference venv made by /work/shared/ref/setup.sh (numpy,
scipy). Re-run from anywhere; the seed is fixed, so the file is reproduced::

    ~/.cache/rlx-ref/venv/bin/python tools/gen_hir_block_fixtures.py

Format: ``{"cases": [{"name", "block", "heads", "ffn", "eps", "inputs":
{name: tensor}, "params": {name: tensor}, "output": tensor}]}`` with a tensor
``{"shape": [...], "data": [...]}`` (float32 values, row-major).
"""

import json
import pathlib

import numpy as np
from scipy.special import erf

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/rlx-runtime/tests/fixtures/hir_blocks.json"
rng = np.random.default_rng(20261203)


def f32(a):
    return np.asarray(a, dtype=np.float32)


def tensor(a):
    a = f32(a)
    return {"shape": list(a.shape), "data": [float(v) for v in a.ravel()]}


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def rms_norm(x, g, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def linear(p, name, x):
    y = x @ p[name + ".w"]
    return y + p[name + ".b"] if name + ".b" in p else y


def attention(p, name, x, heads, bias=None, causal=False):
    *lead, s, h = x.shape
    d = h // heads

    def split(t):
        return np.swapaxes(t.reshape(*lead, s, heads, d), -3, -2)

    q, k, v = (split(linear(p, f"{name}.{r}", x)) for r in "qkv")
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
    if bias is not None:
        scores = scores + bias
    if causal:
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    a = softmax(scores) @ v
    return linear(p, f"{name}.o", np.swapaxes(a, -3, -2).reshape(*lead, s, h))


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def params(spec):
    out = {}
    for name, shape in spec:
        if name.endswith(".g"):
            out[name] = f32(1.0 + 0.1 * rng.standard_normal(shape))
        else:
            out[name] = f32(0.2 * rng.standard_normal(shape))
    return out


def encoder_case():
    s, h, heads, ffn, eps = 6, 16, 4, 32, 1e-12
    spec = []
    for r in "qkvo":
        spec += [(f"layer0.attn.{r}.w", (h, h)), (f"layer0.attn.{r}.b", (h,))]
    spec += [("layer0.ln1.g", (h,)), ("layer0.ln1.b", (h,))]
    spec += [("layer0.mlp.up.w", (h, ffn)), ("layer0.mlp.up.b", (ffn,))]
    spec += [("layer0.mlp.down.w", (ffn, h)), ("layer0.mlp.down.b", (h,))]
    spec += [("layer0.ln2.g", (h,)), ("layer0.ln2.b", (h,))]
    p = params(spec)
    x = f32(rng.standard_normal((s, h)))
    # Padding mask: the last two keys are hidden from every query.
    mask = np.zeros((s, s), np.float32)
    mask[:, -2:] = -10000.0
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    x64 = x.astype(np.float64)
    a = attention(p64, "layer0.attn", x64, heads, bias=mask.astype(np.float64))
    h1 = layer_norm(a + x64, p64["layer0.ln1.g"], p64["layer0.ln1.b"], eps)
    f = linear(p64, "layer0.mlp.down", gelu(linear(p64, "layer0.mlp.up", h1)))
    y = layer_norm(f + h1, p64["layer0.ln2.g"], p64["layer0.ln2.b"], eps)
    return {
        "name": "encoder_block", "block": "encoder", "heads": heads, "ffn": ffn, "eps": eps,
        "inputs": {"x": tensor(x), "mask": tensor(mask)},
        "params": {k: tensor(v) for k, v in p.items()},
        "output": tensor(y),
    }


def decoder_case():
    b, s, h, heads, ffn, eps = 2, 5, 16, 4, 24, 1e-6
    spec = [("layer0.norm1.g", (h,))]
    spec += [(f"layer0.attn.{r}.w", (h, h)) for r in "qkvo"]
    spec += [("layer0.norm2.g", (h,))]
    spec += [("layer0.mlp.gate.w", (h, ffn)), ("layer0.mlp.up.w", (h, ffn)), ("layer0.mlp.down.w", (ffn, h))]
    p = params(spec)
    x = f32(rng.standard_normal((b, s, h)))
    p64 = {k: v.astype(np.float64) for k, v in p.items()}
    x64 = x.astype(np.float64)
    hid = x64 + attention(p64, "layer0.attn", rms_norm(x64, p64["layer0.norm1.g"], eps), heads, causal=True)
    n2 = rms_norm(hid, p64["layer0.norm2.g"], eps)
    inner = silu(linear(p64, "layer0.mlp.gate", n2)) * linear(p64, "layer0.mlp.up", n2)
    y = hid + linear(p64, "layer0.mlp.down", inner)
    return {
        "name": "decoder_block", "block": "decoder", "heads": heads, "ffn": ffn, "eps": eps,
        "inputs": {"x": tensor(x)},
        "params": {k: tensor(v) for k, v in p.items()},
        "output": tensor(y),
    }


if __name__ == "__main__":
    OUT.write_text(json.dumps({"cases": [encoder_case(), decoder_case()]}) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
