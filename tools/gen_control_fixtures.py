#!/usr/bin/env python3
"""Generate JAX reference fixtures for RLX control flow under transforms.

Writes ``crates/rlx-autodiff/tests/fixtures/control.json``; the Rust harness
``crates/rlx-autodiff/tests/control_jax.rs`` builds the same functions with
``If`` / ``While`` / ``Scan`` / ``CustomFn`` sub-graphs, applies the
transform (``grad_with_loss``, ``jvp``, ``hvp``, ``vmap``), runs it on the CPU and
compares with these values.

Environment (numpy + JAX on the CPU, made by /work/shared/ref/setup.sh)::

    ~/.cache/rlx-ref/venv/bin/python tools/gen_control_fixtures.py

The seed is fixed, so re-running reproduces the file. References are
computed in float64 from inputs drawn on a 1/256 grid (exact in float32).

Models (the Rust harness mirrors each one):

* ``rnn``: ``step(h, x) = (tanh(x @ w + h @ u), sum(h'))`` scanned over
  ``xs [6, 3]`` (``[length, 3]`` where the options give a ``length``) from
  ``h0 [4]``; outputs ``[loss, hT, ys]`` with
  ``loss = sum(ys) + sum(hT * hT)``. (In RLX ``w`` and ``u`` ride in the
  carry unchanged.) ``reverse`` scans from the end; ``checkpoint`` is the
  RLX segment length of reverse mode (any ``k >= 1``, dividing the length
  or not), which the JAX reference does not need.
* ``cond``: ``r = sin(x) * y if p else x * x - y`` for ``x, y [3]``;
  outputs ``[sum(r * r), r]``.
* ``while``: carry ``(x [3], i: int32)``; ``while i < 20 and sum(x*x) < 4:
  x = 1.3 x + 0.1 sin(x); i += 1``; outputs ``[sum(xf), xf, i]``.
* ``clip_vjp``: ``f(x) = x ** 3`` with a custom vjp ``clip(ct * 3 x^2, -1, 1)``;
  output ``sum(f(x))``.
* ``scaled_jvp``: ``f(x) = sin(x)`` with a custom jvp ``2 cos(x) t``.

Case format: ``{"name", "model", "transform", "options", "inputs": [{"name",
"dtype", "shape", "data"}], "outputs": [{"index", "shape", "data"}]}``:
``inputs`` feed the transformed graph by name, ``outputs[k]`` is output
``index`` of the transformed graph.
"""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(20261202)
OUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)),
    "..", "crates", "rlx-autodiff", "tests", "fixtures", "control.json",
)


def grid(*shape, scale=1.0):
    return np.round(rng.uniform(-1, 1, size=shape) * scale * 256) / 256


def tensor(name, a, dtype="float32"):
    a = np.asarray(a)
    return {"name": name, "dtype": dtype, "shape": list(a.shape),
            "data": [float(v) for v in a.reshape(-1)]}


def out(index, a):
    a = np.asarray(a, dtype=np.float64)
    return {"index": index, "shape": list(a.shape),
            "data": [float(v) for v in a.reshape(-1)]}


cases = []


def case(name, model, transform, inputs, outputs, **options):
    cases.append({"name": name, "model": model, "transform": transform,
                  "options": options, "inputs": inputs,
                  "outputs": [out(i, o) for i, o in outputs]})


# ── rnn (Scan) ──
def rnn(h0, w, u, xs, reverse=False):
    def step(h, x):
        h2 = jnp.tanh(x @ w + h @ u)
        return h2, jnp.sum(h2)
    hT, ys = lax.scan(step, h0, xs, reverse=reverse)
    return jnp.sum(ys) + jnp.sum(hT * hT), hT, ys


h0, w, u, xs = grid(4), grid(3, 4), grid(4, 4, scale=0.7), grid(6, 3)
feeds = [tensor("h0", h0), tensor("w", w), tensor("u", u), tensor("xs", xs)]
for reverse in (False, True):
    f = lambda *a: rnn(*a, reverse=reverse)
    (l, hT, ys), vjp = jax.vjp(f, h0, w, u, xs)
    grads = jax.grad(lambda *a: f(*a)[0], argnums=(0, 1, 2, 3))(h0, w, u, xs)
    outs = [(0, l)] + [(1 + k, g) for k, g in enumerate(grads)] + [(5, hT), (6, ys)]
    suffix = "_reverse" if reverse else ""
    case("rnn_grad" + suffix, "rnn", "grad", feeds, outs, reverse=reverse)
    if not reverse:
        for k in (2, 3):
            case(f"rnn_grad_checkpoint{k}", "rnn", "grad", feeds, outs, checkpoint=k)
tans = [grid(4), grid(3, 4), grid(4, 4), grid(6, 3)]
prim, tan = jax.jvp(rnn, (h0, w, u, xs), tuple(tans))
case("rnn_jvp", "rnn", "jvp",
     feeds + [tensor("tangent_" + n, t) for n, t in zip(["h0", "w", "u", "xs"], tans)],
     [(k, p) for k, p in enumerate(prim)] + [(3 + k, t) for k, t in enumerate(tan)])
lossf = lambda *a: rnn(*a)[0]
_, hv = jax.jvp(jax.grad(lossf, argnums=(0, 1, 2, 3)), (h0, w, u, xs), tuple(tans))
case("rnn_hvp", "rnn", "hvp",
     feeds + [tensor("tangent_" + n, t) for n, t in zip(["h0", "w", "u", "xs"], tans)],
     [(k, h) for k, h in enumerate(hv)])
B = 3
bh0, bxs = grid(B, 4), grid(B, 6, 3)
res = jax.vmap(rnn, in_axes=(0, None, None, 0))(bh0, w, u, bxs)
case("rnn_vmap", "rnn", "vmap",
     [tensor("h0", bh0), tensor("w", w), tensor("u", u), tensor("xs", bxs)],
     [(k, r) for k, r in enumerate(res)], batched=["h0", "xs"], batch=B)


# ── cond (If) ──
def cond_f(p, x, y):
    r = lax.cond(p, lambda x, y: jnp.sin(x) * y, lambda x, y: x * x - y, x, y)
    return jnp.sum(r * r), r


x, y = grid(3), grid(3)
tx, ty = grid(3), grid(3)
for p in (True, False):
    pf = [tensor("p", [float(p)], "bool") | {"shape": []}, tensor("x", x), tensor("y", y)]
    (l, r) = cond_f(p, x, y)
    gx, gy = jax.grad(lambda x, y: cond_f(p, x, y)[0], argnums=(0, 1))(x, y)
    tag = "then" if p else "else"
    case(f"cond_grad_{tag}", "cond", "grad", pf, [(0, l), (1, gx), (2, gy), (3, r)])
    lossf = lambda x, y: cond_f(p, x, y)[0]
    _, hv = jax.jvp(jax.grad(lossf, argnums=(0, 1)), (x, y), (tx, ty))
    case(f"cond_hvp_{tag}", "cond", "hvp",
         pf + [tensor("tangent_x", tx), tensor("tangent_y", ty)], [(0, hv[0]), (1, hv[1])])
    prim, tan = jax.jvp(lambda x, y: cond_f(p, x, y), (x, y), (tx, ty))
    case(f"cond_jvp_{tag}", "cond", "jvp",
         pf + [tensor("tangent_x", tx), tensor("tangent_y", ty)],
         [(0, prim[0]), (1, prim[1]), (2, tan[0]), (3, tan[1])])
B = 4
bp = np.array([True, False, False, True])
bx = grid(B, 3)
res = jax.vmap(cond_f, in_axes=(0, 0, None))(bp, bx, y)
case("cond_vmap_batched_pred", "cond", "vmap",
     [{"name": "p", "dtype": "bool", "shape": [B], "data": [float(v) for v in bp]},
      tensor("x", bx), tensor("y", y)],
     [(0, res[0]), (1, res[1])], batched=["p", "x"], batch=B)
res = jax.vmap(lambda x: cond_f(False, x, y))(bx)
case("cond_vmap_shared_pred", "cond", "vmap",
     [tensor("p", [0.0], "bool") | {"shape": []}, tensor("x", bx), tensor("y", y)],
     [(0, res[0]), (1, res[1])], batched=["x"], batch=B)


# ── while ──
def while_f(x):
    def c(s):
        x, i = s
        return jnp.logical_and(i < 20, jnp.sum(x * x) < 4.0)

    def b(s):
        x, i = s
        return 1.3 * x + 0.1 * jnp.sin(x), i + 1
    xf, i = lax.while_loop(c, b, (x, jnp.int32(0)))
    return jnp.sum(xf), xf, i


x = grid(3, scale=0.5)
s, xf, i = while_f(x)
tx = grid(3)
prim, tan = jax.jvp(lambda x: while_f(x)[:2], (x,), (tx,))
case("while_jvp", "while", "jvp", [tensor("x", x), tensor("tangent_x", tx)],
     [(0, s), (1, xf), (2, i), (3, tan[0]), (4, tan[1])])
bx = np.stack([grid(3, scale=0.2), grid(3, scale=0.9), grid(3, scale=1.5)])
res = jax.vmap(while_f)(bx)
assert len(set(np.asarray(res[2]).tolist())) > 1, "trip counts should differ"
case("while_vmap", "while", "vmap", [tensor("x", bx)],
     [(0, res[0]), (1, res[1]), (2, res[2])], batched=["x"], batch=3)


# ── CustomFn ──
@jax.custom_vjp
def cube(x):
    return x ** 3


cube.defvjp(lambda x: (x ** 3, x), lambda x, g: (jnp.clip(g * 3 * x * x, -1.0, 1.0),))
x = grid(5, scale=1.0) * 1.5
l, gx = jax.value_and_grad(lambda x: jnp.sum(cube(x)))(x)
assert np.any(np.abs(3 * x * x) > 1), "the clip must bite"
case("clip_vjp_grad", "clip_vjp", "grad", [tensor("x", x)], [(0, l), (1, gx)])


@jax.custom_jvp
def ssin(x):
    return jnp.sin(x)


ssin.defjvp(lambda p, t: (jnp.sin(p[0]), 2 * jnp.cos(p[0]) * t[0]))
x, tx = grid(4), grid(4)
prim, tan = jax.jvp(ssin, (x,), (tx,))
case("scaled_jvp", "scaled_jvp", "jvp", [tensor("x", x), tensor("tangent_x", tx)],
     [(0, prim), (1, tan)])


# ── rnn with checkpoint segments that need not divide the length ──
# Drawn after every other case, so the earlier cases keep their inputs.
# The reference is JAX's gradient of the plain scan: checkpointing does not
# change the gradient, only what reverse mode stores.
for length, ks in ((7, (3,)), (10, (4,)), (5, (5, 6))):
    h0, w, u, xs = grid(4), grid(3, 4), grid(4, 4, scale=0.7), grid(length, 3)
    feeds = [tensor("h0", h0), tensor("w", w), tensor("u", u), tensor("xs", xs)]
    for reverse in (False, True):
        f = lambda *a: rnn(*a, reverse=reverse)
        l, hT, ys = f(h0, w, u, xs)
        grads = jax.grad(lambda *a: f(*a)[0], argnums=(0, 1, 2, 3))(h0, w, u, xs)
        outs = [(0, l)] + [(1 + k, g) for k, g in enumerate(grads)] + [(5, hT), (6, ys)]
        suffix = "_reverse" if reverse else ""
        for k in ks:
            case(f"rnn_ckpt_len{length}_k{k}{suffix}", "rnn", "grad", feeds, outs,
                 length=length, reverse=reverse, checkpoint=k)

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as fh:
    json.dump({"cases": cases}, fh)
print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")
