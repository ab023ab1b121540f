#!/usr/bin/env python3
"""numpy references for post-training int8 fake-quant (rlx_compile::passes::quantize).

Writes ``crates/rlx-runtime/tests/fixtures/fake_quant.json``, read by
``crates/rlx-runtime/tests/fake_quant.rs``:

* ``matmul_*``: ``fq(x) @ fq(w)`` for one matmul, calibrated on ``x`` itself,
  in each mode (symmetric / asymmetric activations and weights, weights per
  tensor or per output channel);
* ``conv``: ``fq(x)`` (asymmetric, per tensor) and ``fq(w)`` (symmetric, per
  output channel = axis 0) of a 2-d convolution's inputs;
* ``mlp``: ``relu(x @ w1 + b1) @ w2 + b2`` calibrated on four sample inputs,
  evaluated on a fifth, with and without fake-quant.

Fake-quant (all float32, numpy's round is half-to-even):
symmetric ``s = amax / 127, z = 0, q in [-127, 127]``; asymmetric
``lo = min(min, 0), hi = max(max, 0), s = (hi - lo) / 255,
z = clip(round(-128 - lo / s), -128, 127), q in [-128, 127]``;
``fq(x) = (clip(round(x / s) + z, qlo, qhi) - z) * s``.

Environment: the reference venv made by /work/shared/ref/setup.sh. Re-run
from anywhere (fixed seed, reproducible)::

    ~/.cache/rlx-ref/venv/bin/python tools/gen_fake_quant_fixtures.py
"""

import json
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/rlx-runtime/tests/fixtures/fake_quant.json"
rng = np.random.default_rng(4242)
F = np.float32


def qparams(lo, hi, mode):
    lo, hi = F(lo), F(hi)
    if mode == "symmetric":
        s = F(max(abs(lo), abs(hi))) / F(127)
        return (s if s > 0 else F(1)), F(0), F(-127), F(127)
    lo, hi = min(lo, F(0)), max(hi, F(0))
    s = (hi - lo) / F(255)
    s = s if s > 0 else F(1)
    z = F(np.clip(np.round(F(-128) - lo / s), -128, 127))
    return s, z, F(-128), F(127)


def fq(x, lo, hi, mode, axis=None):
    x = F(x)
    if axis is None:
        s, z, qlo, qhi = qparams(lo, hi, mode)
    else:
        params = [qparams(a, b, mode) for a, b in zip(lo, hi)]
        shape = [1] * x.ndim
        shape[axis] = len(params)
        s = F([p[0] for p in params]).reshape(shape)
        z = F([p[1] for p in params]).reshape(shape)
        qlo, qhi = params[0][2], params[0][3]
    q = np.minimum(np.maximum(np.round(x / s) + z, qlo), qhi)
    return F((q - z) * s)


def fq_tensor(x, mode):
    return fq(x, x.min(), x.max(), mode)


def fq_weight(w, mode, per_channel):
    if per_channel:
        return fq(w, w.min(0), w.max(0), mode, axis=1)
    return fq(w, w.min(), w.max(), mode)


def t(a):
    a = F(a)
    return {"shape": list(a.shape), "data": [float(v) for v in a.ravel()]}


def matmul_case(act, wmode, per_channel):
    x = F(rng.standard_normal((4, 6)) + 0.3)
    w = F(0.5 * rng.standard_normal((6, 3)))
    y = fq_tensor(x, act).astype(np.float64) @ fq_weight(w, wmode, per_channel).astype(np.float64)
    return {
        "name": f"matmul_{act}_{wmode}_{'channel' if per_channel else 'tensor'}",
        "activations": act, "weights": wmode, "per_channel": per_channel,
        "x": t(x), "w": t(w), "want": t(y),
    }


def conv_case():
    x = F(rng.standard_normal((1, 2, 5, 5)))
    w = F(0.4 * rng.standard_normal((3, 2, 3, 3)))
    axes = (1, 2, 3)
    return {
        "name": "conv", "activations": "asymmetric", "weights": "symmetric", "per_channel": True,
        "x": t(x), "w": t(w),
        "x_fq": t(fq_tensor(x, "asymmetric")),
        "w_fq": t(fq(w, w.min(axes), w.max(axes), "symmetric", axis=0)),
    }


def mlp_case():
    w1 = F(0.3 * rng.standard_normal((16, 32)))
    b1 = F(0.1 * rng.standard_normal(32))
    w2 = F(0.3 * rng.standard_normal((32, 8)))
    b2 = F(0.1 * rng.standard_normal(8))
    samples = [F(rng.standard_normal((8, 16))) for _ in range(4)]
    x = F(0.8 * rng.standard_normal((8, 16)))
    hs = [np.maximum(s @ w1 + b1, 0) for s in samples]
    xlo, xhi = min(s.min() for s in samples), max(s.max() for s in samples)
    hlo, hhi = min(h.min() for h in hs), max(h.max() for h in hs)
    mode = "asymmetric"
    xq = fq(x, xlo, xhi, mode)
    h = F(np.maximum(xq.astype(np.float64) @ fq_weight(w1, "symmetric", True) + b1, 0))
    hq = fq(h, hlo, hhi, mode)
    y = hq.astype(np.float64) @ fq_weight(w2, "symmetric", True) + b2
    y32 = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + b2
    return {
        "name": "mlp", "activations": mode, "weights": "symmetric", "per_channel": True,
        "params": {"w1": t(w1), "b1": t(b1), "w2": t(w2), "b2": t(b2)},
        "samples": [t(s) for s in samples], "x": t(x),
        "want": t(y), "want_f32": t(y32),
        "h_scale": float(qparams(hlo, hhi, mode)[0]),
    }


if __name__ == "__main__":
    cases = [
        matmul_case("symmetric", "symmetric", True),
        matmul_case("asymmetric", "asymmetric", False),
        matmul_case("asymmetric", "symmetric", True),
        matmul_case("symmetric", "asymmetric", True),
    ]
    cases.append(conv_case())
    cases.append(mlp_case())
    OUT.write_text(json.dumps({"cases": cases}) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
