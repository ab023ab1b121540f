#!/usr/bin/env python3
"""Generate JAX reference fixtures for the RLX autodiff transforms.

Writes JSON files to ``crates/rlx-autodiff/tests/fixtures/`` (one per case
family: ``grad``, ``higher_order``, ``jvp``, ``hvp``, ``vmap``); the Rust
harness ``crates/rlx-autodiff/tests/jax_parity.rs`` builds each case's
function with the RLX graph builders, applies the transform
(``grad_with_loss``, ``jvp``, ``hvp``, ``vmap``, ``nth_order_grad``),
compiles it for the CPU, runs it and compares against these values.

Python environment (numpy + JAX on the CPU, created once)::

    python3 -m venv ~/.cache/rlx-ref/jax
    ~/.cache/rlx-ref/jax/bin/pip install numpy jax jaxlib

Run it from anywhere (the output path is resolved relative to this file)::

    ~/.cache/rlx-ref/jax/bin/python tools/gen_ad_fixtures.py

The random seed is fixed, so re-running it reproduces the same files.

References are computed in float64 (``jax.config.update("jax_enable_x64",
True)``) from the exact input values -- inputs are drawn on a 1/256 grid, so
they are exact in float32 -- and rounded once to the case dtype. As a sanity
check of the tolerances the script also evaluates every float32 case with JAX
in float32 and prints how close that comes to the float64 reference (the
``jax-f32`` column: the worst ``|err| / (atol + rtol |want|)``, which must
stay below 1 for a float32 implementation to be able to pass).

File format: ``{"cases": [case, ...]}`` where a case is::

    {"name": str,
     "model": str,            # which function the harness builds (see below)
     "dtype": "float32" | "float64",
     "transform": {...},      # see below
     "leaves": [{"name", "role": "input" | "param", "dtype", "shape"}, ...],
                              # the leaves of the function, in creation order,
                              # with their (unbatched) shapes
     "feeds": [{"name", "dtype", "shape", "data"}, ...],
                              # values of every input / param of the
                              # transformed graph (tangent_* inputs included)
     "outputs": [{"name", "dtype", "shape", "data"}, ...],
                              # expected outputs of the transformed graph, in order
     "rtol": float, "atol_rel": float}

An output matches when ``|got - want| <= atol + rtol * |want|`` elementwise,
with ``atol = atol_rel * max|want|`` of that output.

Transforms (``kind``):

* ``grad``: ``grad_with_loss(f, wrt)``; outputs ``[loss, d loss/d wrt...]``.
* ``jvp``: ``jvp(f, tangent_for)``; feeds hold ``tangent_<name>``; outputs
  ``[primal outputs..., tangent outputs...]``.
* ``hvp``: ``hvp(f, wrt)``; feeds hold ``tangent_<name>``; outputs ``[H v]``
  restricted to each wrt.
* ``vmap``: ``vmap(f, batched, batch_size)``; batched feeds carry the extra
  leading axis.
* ``vmap_grad``: ``vmap(grad_with_loss(f, wrt), batched, batch_size)``
  (per-example gradients).
* ``nth_order_grad``: ``nth_order_grad(f, wrt, order)``.

Models (the function before the transform; names are the leaf names):

* ``mlp_loss``: ``h = tanh(x @ w1 + b1); z = h @ w2 + b2;
  l = -sum(y * log_softmax(z), -1)``; the loss is ``mean(l)`` over the batch
  (for a single example ``x [12]``, ``l`` itself).
* ``mlp_logits``: ``z`` of the above.
* ``attn_block``: ``h = layer_norm(x, gamma, beta, eps 1e-5)`` over the last
  axis; ``q, k, v = h @ wq, h @ wk, h @ wv``; ``a = causal attention(q, k, v)``
  with scale ``1/sqrt(8)``; ``out = x + a``.
* ``attn_loss``: ``sum(out * out) / out.size`` of the above.
* ``conv_avg`` / ``conv_max``: ``conv2d(x, conv_w, conv_b, stride 1, pad 1)
  -> relu -> avg / max pool 2x2 stride 2 -> reshape [N, 64] -> @ lin_w + lin_b
  = z``; loss ``mean(logsumexp(z, -1) - sum(z * y, -1))`` (``y`` one-hot).
* ``bcast``: ``sum(sin(a * b + c) * exp(-(a - c) ** 2) / (1 + b * b))``.
* ``sinexp``: ``sum(sin(x) * exp(x) * x ** 3)``; ``tanh``: ``sum(tanh(x))``
  (the sum is the identity for a scalar ``x``).
"""

import json
import math
import os
import sys

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.scipy.special import logsumexp  # noqa: E402

SEED = 20240612
rng = np.random.default_rng(SEED)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "crates", "rlx-autodiff", "tests", "fixtures")

F32, F64 = np.float32, np.float64
TOL = {"float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}
FLOAT_DIGITS = {"float32": 9, "float64": None}
SIZE_LIMIT = 800 * 1024

# ── encoding ────────────────────────────────────────────────────────────────


def fnum(v, digits):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if digits is None:
        return v
    return float(f"{v:.{digits}g}")


def enc(name, arr, dtype, exact):
    arr = np.asarray(arr, dtype=np.float64).astype(dtype)
    dn = np.dtype(dtype).name
    digits = None if exact else FLOAT_DIGITS[dn]
    return {
        "name": name,
        "dtype": dn,
        "shape": [int(d) for d in arr.shape],
        "data": [fnum(v, digits) for v in arr.reshape(-1)],
    }


# ── data ────────────────────────────────────────────────────────────────────


def qn(shape, scale=1.0, q=256):
    """Normal values times scale, on a 1/q grid (exact in float32)."""
    return np.round(rng.standard_normal(shape) * scale * q) / q


def one_hot(labels, n):
    y = np.zeros((len(labels), n))
    y[np.arange(len(labels)), labels] = 1.0
    return y


# ── models (float64 or float32 jnp arrays in, same out) ─────────────────────


def mlp_logits(x, w1, b1, w2, b2):
    h = jnp.tanh(x @ w1 + b1)
    return h @ w2 + b2


def mlp_loss(x, y, w1, b1, w2, b2):
    z = mlp_logits(x, w1, b1, w2, b2)
    per = -jnp.sum(y * jax.nn.log_softmax(z, axis=-1), axis=-1)
    return jnp.mean(per) if per.ndim > 0 else per


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + eps) * gamma + beta


def causal_attention(q, k, v):
    d = q.shape[-1]
    s = (q @ jnp.swapaxes(k, -1, -2)) * (1.0 / math.sqrt(d))
    sq, sk = q.shape[-2], k.shape[-2]
    keep = jnp.arange(sk)[None, :] <= jnp.arange(sq)[:, None] + (sk - sq)
    s = jnp.where(keep, s, -jnp.inf)
    return jax.nn.softmax(s, axis=-1) @ v


def attn_block(x, gamma, beta, wq, wk, wv):
    h = layer_norm(x, gamma, beta)
    return x + causal_attention(h @ wq, h @ wk, h @ wv)


def attn_loss(x, gamma, beta, wq, wk, wv):
    out = attn_block(x, gamma, beta, wq, wk, wv)
    return jnp.sum(out * out) / out.size


def conv_logits(pool, x, conv_w, conv_b, lin_w, lin_b):
    h = lax.conv_general_dilated(
        x, conv_w, window_strides=(1, 1), padding=((1, 1), (1, 1)),
        dimension_numbers=("NCHW", "OIHW", "NCHW"),
    ) + conv_b[None, :, None, None]
    h = jax.nn.relu(h)
    if pool == "avg":
        h = lax.reduce_window(h, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID") / 4.0
    else:
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
    h = h.reshape(h.shape[0], -1)
    return h @ lin_w + lin_b


def conv_loss(pool):
    def f(x, y, conv_w, conv_b, lin_w, lin_b):
        z = conv_logits(pool, x, conv_w, conv_b, lin_w, lin_b)
        return jnp.mean(logsumexp(z, axis=-1) - jnp.sum(z * y, axis=-1))

    return f


def bcast(a, b, c):
    return jnp.sum(jnp.sin(a * b + c) * jnp.exp(-((a - c) ** 2)) / (1.0 + b * b))


def sinexp(x):
    return jnp.sum(jnp.sin(x) * jnp.exp(x) * x**3)


def tanh_sum(x):
    return jnp.sum(jnp.tanh(x))


MODELS = {
    "mlp_loss": mlp_loss,
    "mlp_logits": mlp_logits,
    "attn_block": attn_block,
    "attn_loss": attn_loss,
    "conv_avg": conv_loss("avg"),
    "conv_max": conv_loss("max"),
    "bcast": bcast,
    "sinexp": sinexp,
    "tanh": tanh_sum,
}

# ── transforms in JAX ───────────────────────────────────────────────────────


def outputs_of(model, transform, leaves, feeds):
    """Reference outputs: list of (name, array) from feeds {name: array}."""
    f = MODELS[model]
    names = [l["name"] for l in leaves]
    kind = transform["kind"]
    args = [feeds[n] for n in names]

    def partial(wrt):
        """f as a function of the wrt leaves only (the others fixed)."""
        idx = [names.index(w) for w in wrt]

        def g(*ws):
            a = list(args)
            for i, w in zip(idx, ws):
                a[i] = w
            return f(*a)

        return g, [args[i] for i in idx]

    if kind == "grad":
        wrt = transform["wrt"]
        g, primals = partial(wrt)
        loss, grads = jax.value_and_grad(g, argnums=tuple(range(len(wrt))))(*primals)
        return [("loss", loss)] + [(f"d_{w}", d) for w, d in zip(wrt, grads)]
    if kind == "jvp":
        tf = transform["tangent_for"]
        g, primals = partial(tf)
        tangents = [feeds[f"tangent_{n}"] for n in tf]
        out, tout = jax.jvp(g, primals, tangents)
        return [("primal", out), ("tangent", tout)]
    if kind == "hvp":
        wrt = transform["wrt"]
        g, primals = partial(wrt)
        tangents = [feeds[f"tangent_{n}"] for n in wrt]
        grad_g = jax.grad(g, argnums=tuple(range(len(wrt))))
        _, hv = jax.jvp(grad_g, tuple(primals), tuple(tangents))
        return [(f"hvp_{w}", h) for w, h in zip(wrt, hv)]
    if kind in ("vmap", "vmap_grad"):
        batched = transform["batched"]
        axes = tuple(0 if n in batched else None for n in names)
        if kind == "vmap":
            fn = f
        else:
            wrt = transform["wrt"]
            idx = tuple(names.index(w) for w in wrt)

            def fn(*a):
                loss, grads = jax.value_and_grad(f, argnums=idx)(*a)
                return (loss,) + tuple(grads)

        out = jax.vmap(fn, in_axes=axes)(*args)
        if kind == "vmap":
            return [("out", out)]
        return [("loss", out[0])] + [(f"d_{w}", d) for w, d in zip(transform["wrt"], out[1:])]
    if kind == "nth_order_grad":
        # d1 = grad(f); dk = grad(sum(d(k-1))): elementwise for elementwise f.
        d = jax.grad(f)
        for _ in range(transform["order"] - 1):
            d = (lambda p: jax.grad(lambda x: jnp.sum(p(x))))(d)
        return [(f"d{transform['order']}", d(args[0]))]
    raise ValueError(kind)


# ── cases ───────────────────────────────────────────────────────────────────

jax_f32_report = []


def make_case(name, model, dtype, transform, leaves, feeds):
    """leaves: [(name, role, shape)]; feeds: {name: float64 ndarray}."""
    dn = np.dtype(dtype).name
    leaf_specs = [{"name": n, "role": r, "dtype": dn, "shape": list(s)} for n, r, s in leaves]
    # Inputs are exact in the case dtype (grid values); the reference is f64.
    feeds = {k: np.asarray(v, dtype=np.float64).astype(dtype).astype(np.float64) for k, v in feeds.items()}
    ref = outputs_of(model, transform, leaf_specs, {k: jnp.asarray(v) for k, v in feeds.items()})
    rtol, atol_rel = TOL[dn]
    for oname, o in ref:
        if not np.all(np.isfinite(np.asarray(o))):
            sys.exit(f"{name}: non-finite reference in {oname}")
    if dtype == F32:
        got = outputs_of(
            model, transform, leaf_specs,
            {k: jnp.asarray(v.astype(np.float32)) for k, v in feeds.items()},
        )
        worst = 0.0
        for (_, w), (_, g) in zip(ref, got):
            w, g = np.asarray(w, np.float64), np.asarray(g, np.float64)
            atol = atol_rel * float(np.max(np.abs(w))) if w.size else 0.0
            r = np.abs(g - w) / (atol + rtol * np.abs(w) + 1e-300)
            worst = max(worst, float(np.max(r)) if r.size else 0.0)
        jax_f32_report.append((name, worst))
    return {
        "name": name,
        "model": model,
        "dtype": dn,
        "transform": transform,
        "leaves": leaf_specs,
        "feeds": [enc(k, v, dtype, True) for k, v in feeds.items()],
        "outputs": [enc(n, o, dtype, False) for n, o in ref],
        "rtol": rtol,
        "atol_rel": atol_rel,
    }


def mlp_leaves(batch):
    xs = [batch, 12] if batch else [12]
    ys = [batch, 5] if batch else [5]
    return [
        ("x", "input", xs), ("y", "input", ys),
        ("w1", "param", [12, 16]), ("b1", "param", [16]),
        ("w2", "param", [16, 5]), ("b2", "param", [5]),
    ]


def mlp_values(batch):
    labels = rng.integers(0, 5, size=batch)
    return {
        "x": qn((batch, 12)),
        "y": one_hot(labels, 5),
        "w1": qn((12, 16), 0.4),
        "b1": qn((16,), 0.2),
        "w2": qn((16, 5), 0.5),
        "b2": qn((5,), 0.2),
    }


ATTN_LEAVES = [
    ("x", "input", [2, 6, 8]),
    ("gamma", "param", [8]), ("beta", "param", [8]),
    ("wq", "param", [8, 8]), ("wk", "param", [8, 8]), ("wv", "param", [8, 8]),
]


def attn_values(xshape=(2, 6, 8)):
    return {
        "x": qn(xshape),
        "gamma": 1.0 + qn((8,), 0.2),
        "beta": qn((8,), 0.2),
        "wq": qn((8, 8), 0.4),
        "wk": qn((8, 8), 0.4),
        "wv": qn((8, 8), 0.4),
    }


CONV_LEAVES = [
    ("x", "input", [2, 1, 8, 8]), ("y", "input", [2, 3]),
    ("conv_w", "param", [4, 1, 3, 3]), ("conv_b", "param", [4]),
    ("lin_w", "param", [64, 3]), ("lin_b", "param", [3]),
]


def conv_values(pool):
    """Values with no pre-activation at 0 and (max pool) no tie among positive maxima."""
    for _ in range(1000):
        v = {
            "x": qn((2, 1, 8, 8)),
            "y": one_hot(rng.integers(0, 3, size=2), 3),
            "conv_w": qn((4, 1, 3, 3), 0.4),
            "conv_b": qn((4,), 0.1),
            "lin_w": qn((64, 3), 0.3),
            "lin_b": qn((3,), 0.1),
        }
        pre = np.asarray(lax.conv_general_dilated(
            jnp.asarray(v["x"]), jnp.asarray(v["conv_w"]), (1, 1), ((1, 1), (1, 1)),
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )) + v["conv_b"][None, :, None, None]
        if np.min(np.abs(pre)) < 1e-3:
            continue
        if pool == "max":
            r = np.maximum(pre, 0).reshape(2, 4, 4, 2, 4, 2).transpose(0, 1, 2, 4, 3, 5).reshape(2, 4, 4, 4, 4)
            srt = np.sort(r, axis=-1)
            gap = srt[..., -1] - srt[..., -2]
            if np.any((srt[..., -1] > 0) & (gap < 1e-3)):
                continue
        return v
    sys.exit("no tie-free conv values found")


BCAST_LEAVES = [("a", "input", [3, 1, 4]), ("b", "input", [5, 1]), ("c", "input", [4])]


def bcast_values():
    return {"a": qn((3, 1, 4), 0.8), "b": qn((5, 1), 0.8), "c": qn((4,), 0.8)}


def grad_cases():
    cases = []
    for dt, tag in [(F32, "f32"), (F64, "f64")]:
        cases.append(make_case(
            f"mlp_grad_{tag}", "mlp_loss", dt,
            {"kind": "grad", "wrt": ["w1", "b1", "w2", "b2", "x"]},
            mlp_leaves(8), mlp_values(8)))
        cases.append(make_case(
            f"attn_grad_{tag}", "attn_loss", dt,
            {"kind": "grad", "wrt": ["gamma", "beta", "wq", "wk", "wv", "x"]},
            ATTN_LEAVES, attn_values()))
        for pool in ["avg", "max"]:
            cases.append(make_case(
                f"conv_{pool}_grad_{tag}", f"conv_{pool}", dt,
                {"kind": "grad", "wrt": ["conv_w", "conv_b", "lin_w", "lin_b"]},
                CONV_LEAVES, conv_values(pool)))
        cases.append(make_case(
            f"bcast_grad_{tag}", "bcast", dt,
            {"kind": "grad", "wrt": ["a", "b", "c"]},
            BCAST_LEAVES, bcast_values()))
    return cases


HO_POINTS = [-1.3, -0.4, 0.3, 0.9, 1.7]


def higher_order_cases():
    cases = []
    for model in ["sinexp", "tanh"]:
        for order in range(1, 5):
            for i, x in enumerate(HO_POINTS):
                cases.append(make_case(
                    f"{model}_d{order}_scalar_{i}_f64", model, F64,
                    {"kind": "nth_order_grad", "wrt": "x", "order": order},
                    [("x", "input", [])], {"x": np.array(x)}))
            cases.append(make_case(
                f"{model}_d{order}_vec_f64", model, F64,
                {"kind": "nth_order_grad", "wrt": "x", "order": order},
                [("x", "input", [5])], {"x": np.array(HO_POINTS)}))
        for order in range(1, 3):
            cases.append(make_case(
                f"{model}_d{order}_vec_f32", model, F32,
                {"kind": "nth_order_grad", "wrt": "x", "order": order},
                [("x", "input", [5])], {"x": np.array(HO_POINTS)}))
    return cases


def with_tangents(values, shapes, names):
    out = dict(values)
    for n in names:
        out[f"tangent_{n}"] = qn(shapes[n])
    return out


def jvp_cases():
    cases = []
    for dt, tag in [(F32, "f32"), (F64, "f64")]:
        leaves = [l for l in mlp_leaves(8) if l[0] != "y"]
        vals = mlp_values(8)
        del vals["y"]
        shapes = {n: s for n, _, s in leaves}
        cases.append(make_case(
            f"mlp_logits_jvp_{tag}", "mlp_logits", dt,
            {"kind": "jvp", "tangent_for": ["w1", "x"]},
            leaves, with_tangents(vals, shapes, ["w1", "x"])))
        shapes = {n: s for n, _, s in ATTN_LEAVES}
        cases.append(make_case(
            f"attn_block_jvp_{tag}", "attn_block", dt,
            {"kind": "jvp", "tangent_for": ["x"]},
            ATTN_LEAVES, with_tangents(attn_values(), shapes, ["x"])))
    return cases


def hvp_cases():
    cases = []
    for dt, tag in [(F32, "f32"), (F64, "f64")]:
        leaves = mlp_leaves(8)
        shapes = {n: s for n, _, s in leaves}
        cases.append(make_case(
            f"mlp_hvp_w2_b2_{tag}", "mlp_loss", dt,
            {"kind": "hvp", "wrt": ["w2", "b2"]},
            leaves, with_tangents(mlp_values(8), shapes, ["w2", "b2"])))
        shapes = {n: s for n, _, s in BCAST_LEAVES}
        cases.append(make_case(
            f"bcast_hvp_a_{tag}", "bcast", dt,
            {"kind": "hvp", "wrt": ["a"]},
            BCAST_LEAVES, with_tangents(bcast_values(), shapes, ["a"])))
    return cases


def vmap_cases():
    cases = []
    for dt, tag in [(F32, "f32"), (F64, "f64")]:
        vals = mlp_values(8)  # x [8, 12], y [8, 5]: 8 examples of x [12], y [5]
        cases.append(make_case(
            f"mlp_per_example_grad_{tag}", "mlp_loss", dt,
            {"kind": "vmap_grad", "wrt": ["w1", "b1", "w2", "b2"], "batched": ["x", "y"], "batch_size": 8},
            mlp_leaves(None), vals))
        cases.append(make_case(
            f"attn_block_vmap3_{tag}", "attn_block", dt,
            {"kind": "vmap", "batched": ["x"], "batch_size": 3},
            ATTN_LEAVES, attn_values((3, 2, 6, 8))))
        v = bcast_values()
        v["a"] = qn((4, 3, 1, 4), 0.8)
        cases.append(make_case(
            f"bcast_vmap4_{tag}", "bcast", dt,
            {"kind": "vmap", "batched": ["a"], "batch_size": 4},
            BCAST_LEAVES, v))
    return cases


FAMILIES = [
    ("grad", grad_cases),
    ("higher_order", higher_order_cases),
    ("jvp", jvp_cases),
    ("hvp", hvp_cases),
    ("vmap", vmap_cases),
]


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    total_bytes, total_cases = 0, 0
    for family, gen in FAMILIES:
        cases = gen()
        names = [c["name"] for c in cases]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            sys.exit(f"{family}: duplicate case names {sorted(dup)}")
        body = ",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in cases)
        text = '{"cases":[\n' + body + "\n]}\n"
        with open(os.path.join(OUT_DIR, f"{family}.json"), "w") as f:
            f.write(text)
        total_bytes += len(text)
        total_cases += len(cases)
        print(f"{family:12s} {len(cases):4d} cases {len(text) / 1024:7.1f} KiB")
    print(f"{'total':12s} {total_cases:4d} cases {total_bytes / 1024:7.1f} KiB -> {os.path.normpath(OUT_DIR)}")
    if total_bytes > SIZE_LIMIT:
        sys.exit(f"fixtures total {total_bytes} bytes, over the {SIZE_LIMIT} limit")
    print("\njax-f32 (worst |err| / (atol + rtol |want|) of JAX in float32 vs the float64 reference):")
    for name, worst in jax_f32_report:
        flag = "" if worst < 1.0 else "   <-- float32 JAX itself is outside the tolerance"
        print(f"  {name:32s} {worst:8.3f}{flag}")


if __name__ == "__main__":
    main()
