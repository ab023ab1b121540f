#!/usr/bin/env python3
"""Reference values for rlx-tensor's program suite, from jax.numpy (float64).

Re-run from the repository root:
    ~/.cache/rlx-ref/venv/bin/python tools/gen_tensor_fixtures.py
It writes crates/rlx-tensor/tests/fixtures/programs.json: for each program
its inputs (seeded numpy draws) and the outputs JAX computes, including
grads / jvps / hvps / vmaps of the same programs. The Rust test
crates/rlx-tensor/tests/programs.rs builds each program with `Tensor`,
compiles it on the CPU and compares (f32 against these f64 values).
"""
import json
import pathlib

import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
import numpy as np
from jax import lax

rng = np.random.RandomState(21)
programs = []


def draw(shape, kind):
    if kind == "f":
        return rng.randn(*shape)
    if kind == "pos":
        return rng.uniform(0.5, 2.0, size=shape)
    if kind == "unit":
        return rng.uniform(-0.9, 0.9, size=shape)
    if kind == "big":
        return rng.uniform(-1e4, 1e4, size=shape)
    if kind == "nan":  # normal draws with about a quarter NaN (never a whole row)
        a = rng.randn(*shape)
        m = rng.uniform(size=shape) < 0.25
        m[..., 0] = False
        a[m] = np.nan
        return a
    if kind.startswith("i"):  # i<lo>_<hi>: integers in [lo, hi)
        lo, hi = kind[1:].split("_")
        return rng.randint(int(lo), int(hi), size=shape).astype(np.int32)
    raise ValueError(kind)


def prog(name, inputs, f):
    """inputs: list of (name, shape, kind); f(*arrays) -> array or tuple."""
    arrs = [draw(s, k) for _, s, k in inputs]
    outs = f(*[jnp.asarray(a) for a in arrs])
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    def enc(a):
        a = np.asarray(a)
        dt = {"f": "f32", "i": "i32", "b": "bool", "u": "i32"}[a.dtype.kind]
        data = [None if np.isnan(v) else v for v in a.astype(np.float64).ravel().tolist()]  # null = NaN
        return {"dtype": dt, "shape": list(a.shape), "data": data}
    programs.append({
        "name": name,
        "inputs": [dict(name=n, **enc(a)) for (n, _, _), a in zip(inputs, arrs)],
        "outputs": [enc(o) for o in outs],
    })


F = "f"
# ── broadcasting ──
prog("add_bcast_row", [("a", [3, 4], F), ("b", [4], F)], lambda a, b: a + b)
prog("add_bcast_col", [("a", [3, 1], F), ("b", [1, 4], F)], lambda a, b: a + b)
prog("mul_bcast_3d", [("a", [2, 1, 4], F), ("b", [3, 1], F)], lambda a, b: a * b)
prog("scalar_mix", [("a", [2, 3], F)], lambda a: (a * 2.5 - 1.0, 1.0 / (1.0 + a * a), -a))
prog("sub_div_pow", [("a", [2, 3], F), ("b", [3], F), ("c", [2, 1], "pos")],
     lambda a, b, c: ((a - b) / c, c ** 1.5, jnp.maximum(a, b) - jnp.minimum(a, 0.0)))
prog("bcast_rank0", [("a", [], F), ("b", [2, 2], F)], lambda a, b: a * b + a)
prog("int_true_div", [("a", [4], "i1_9"), ("b", [4], "i1_5")],
     lambda a, b: (a / b, jnp.floor_divide(a, b), a % b, a + b))
# ── indexing ──
prog("slice_steps", [("x", [4, 6, 8], F)], lambda x: x[:, 1:4, ::2])
prog("slice_neg_newaxis", [("x", [4, 6, 8], F)], lambda x: x[-1, ..., None])
prog("slice_reverse", [("x", [4, 6], F)], lambda x: (x[::-1, 5::-2], x[-3:-1, :-2]))
prog("slice_int", [("x", [3, 4, 5], F)], lambda x: (x[1, -2], x[..., -1], x[None, 2]))
prog("slice_clamp", [("x", [5], F)], lambda x: (x[-100:100], x[3:1], x[10:]))
prog("slice_more", [("x", [9, 4], F)],
     lambda x: (x[:3], x[4:0:-1], x[::-2], x[None, 1, None], x[0:8:3], x[..., ::-1], x[-2:, -1:], x[2:-2:2, 1]))
prog("take_neg", [("x", [5, 3], F), ("i", [4], "i-5_5")],
     lambda x, i: (jnp.take(x, i, axis=0), jnp.take(x, i % 3, axis=1)))
prog("take_along", [("x", [3, 4], F), ("i", [3, 2], "i0_4")],
     lambda x, i: jnp.take_along_axis(x, i, axis=1))
# ── reductions ──
prog("sum_keepdims", [("x", [3, 4, 5], F)],
     lambda x: (jnp.sum(x, axis=1, keepdims=True), jnp.sum(x), jnp.sum(x, axis=(0, 2))))
prog("mean_max_min", [("x", [3, 4, 5], F)],
     lambda x: (jnp.mean(x, axis=-1), jnp.max(x, axis=(0, 2), keepdims=True), jnp.min(x), jnp.prod(x[0], axis=0)))
prog("var_std", [("x", [4, 5], F)],
     lambda x: (jnp.var(x, axis=1, ddof=1), jnp.std(x, axis=0), jnp.var(x, keepdims=True), jnp.ptp(x, axis=1)))
prog("argmax_argmin", [("x", [3, 5], F)],
     lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x), jnp.argmax(x, axis=0, keepdims=True)))
prog("logsumexp_big", [("x", [3, 6], "big")],
     lambda x: (jax.nn.logsumexp(x, axis=-1), jax.nn.logsumexp(x, axis=0, keepdims=True), jax.nn.logsumexp(-x)))
prog("softmax_big", [("x", [3, 6], "big")],
     lambda x: (jax.nn.softmax(x, axis=-1), jax.nn.log_softmax(x, axis=-1), jax.nn.softmax(x, axis=0)))
prog("cumsum", [("x", [3, 4], F)], lambda x: (jnp.cumsum(x, axis=1), jnp.cumsum(x), jnp.cumsum(x, axis=-2)))
prog("all_any_count", [("x", [3, 4], "i-1_2")],
     lambda x: (jnp.all(x, axis=1), jnp.any(x, axis=0), jnp.count_nonzero(x, axis=1), jnp.sum(x > 0)))
prog("sort_median", [("x", [3, 5], F)],
     lambda x: (jnp.sort(x, axis=1), jnp.argsort(x, axis=0), jnp.median(x, axis=1), jnp.median(x)))
# ── products ──
prog("einsum_mm", [("a", [3, 4], F), ("b", [4, 5], F)], lambda a, b: jnp.einsum("ij,jk->ik", a, b))
prog("einsum_batch", [("a", [2, 3, 4], F), ("b", [2, 4, 5], F)], lambda a, b: jnp.einsum("bij,bjk->bik", a, b))
prog("einsum_attn", [("q", [2, 3, 4, 5], F), ("k", [2, 3, 6, 5], F)],
     lambda q, k: jnp.einsum("bhqd,bhkd->bhqk", q, k))
prog("einsum_misc", [("a", [3, 4], F), ("b", [3, 4], F), ("v", [5], F)],
     lambda a, b, v: (jnp.einsum("ij,ij->", a, b), jnp.einsum("ij->j", a), jnp.einsum("i,j->ij", a[0], v),
                      jnp.einsum("ij,kj->ik", a, b), jnp.einsum("ij->ji", a), jnp.einsum("ij,ik->jk", a, b)))
prog("matmul_bcast", [("a", [2, 1, 3, 4], F), ("b", [5, 4, 2], F), ("v", [4], F)],
     lambda a, b, v: (a @ b, a[0, 0] @ v, v @ b))
prog("dot_family", [("a", [2, 3, 4], F), ("b", [4, 5], F), ("u", [4], F), ("w", [4], F)],
     lambda a, b, u, w: (jnp.dot(a, b), jnp.dot(u, w), jnp.inner(a, u), jnp.outer(u, w), jnp.vdot(b[:, :4], b[:, 1:]),
                         jnp.tensordot(a, b, axes=([2], [0])), jnp.kron(b[:2, :2], b[2:, 3:])))
# ── shapes ──
prog("shape_ops", [("x", [2, 3, 4], F)],
     lambda x: (jnp.reshape(x, (4, -1)), jnp.transpose(x), jnp.transpose(x, (1, 0, 2)), jnp.moveaxis(x, 0, -1),
                jnp.swapaxes(x, 0, 2), jnp.expand_dims(x, (0, 3)), jnp.squeeze(x[:, :1, :1]), x.ravel()))
prog("join_split", [("a", [2, 3], F), ("b", [2, 3], F)],
     lambda a, b: (jnp.concatenate([a, b], axis=1), jnp.stack([a, b], axis=-1), jnp.vstack([a, b]), jnp.hstack([a, b]),
                   *jnp.split(jnp.concatenate([a, b], axis=1), 3, axis=1), *jnp.array_split(a, 2, axis=1),
                   jnp.column_stack([a[0], b[0]])))
prog("movement", [("x", [3, 4], F)],
     lambda x: (jnp.flip(x, 0), jnp.flip(x), jnp.roll(x, 2, axis=1), jnp.roll(x, -3), jnp.tile(x, (2, 1, 2)),
                jnp.repeat(x, 2, axis=0), jnp.pad(x, ((1, 0), (2, 1)), constant_values=0.5), jnp.broadcast_to(x[0], (2, 4))))
prog("triangles", [("x", [4, 5], F), ("v", [3], F)],
     lambda x, v: (jnp.tril(x), jnp.triu(x, 1), jnp.tril(x, -1), jnp.diagonal(x), jnp.diagonal(x, 2), jnp.diagonal(x, -1),
                   jnp.trace(x), jnp.diag(v), jnp.diag(v, 1), jnp.diag(v, -2)))
prog("creation", [("x", [2], F)],
     lambda x: (jnp.arange(5), jnp.arange(1.0, 2.0, 0.25), jnp.linspace(0.0, 1.0, 5), jnp.eye(3, 4, 1), jnp.zeros((2, 3)) + x[0],
                jnp.full((2, 2), 7.0), jnp.tri(3), jnp.identity(2)))
prog("where_clip", [("x", [3, 4], F), ("y", [4], F)],
     lambda x, y: (jnp.where(x > y, x, y), jnp.where(x > 0, x, 0.0), jnp.clip(x, -0.5, 0.5), jnp.clip(x, None, 0.0)))
# ── elementwise math ──
prog("unary_math", [("x", [6], "pos")],
     lambda x: (jnp.exp(x), jnp.log(x), jnp.sqrt(x), jnp.log2(x), jnp.log10(x), jnp.log1p(x), jnp.expm1(x), jnp.cbrt(-x),
                jnp.sinh(x), jnp.cosh(x), jnp.arcsinh(x), jnp.arccosh(x + 1), jnp.exp2(x), jnp.reciprocal(x), jnp.square(x)))
prog("trig", [("x", [6], "unit")],
     lambda x: (jnp.sin(x), jnp.cos(x), jnp.tan(x), jnp.arcsin(x), jnp.arccos(x), jnp.arctan(x), jnp.arctanh(x),
                jnp.arctan2(x, x[::-1]), jnp.sinc(x), jnp.deg2rad(x), jnp.rad2deg(x), jnp.tanh(x)))
prog("rounding", [("x", [8], F)],
     lambda x: (jnp.floor(x * 3), jnp.ceil(x * 3), jnp.round(x * 3), jnp.trunc(x * 3), jnp.sign(x), jnp.abs(x),
                jnp.round(x, 2), jnp.fmod(x * 3, 1.0), jnp.remainder(x * 3, 1.0)))
prog("binary_math", [("a", [5], F), ("b", [5], F)],
     lambda a, b: (jnp.hypot(a, b), jnp.logaddexp(a, b), jnp.logaddexp2(a, b), jnp.copysign(a, b), jnp.heaviside(a, 0.5),
                   jnp.isclose(a, a + 1e-9), jnp.logical_and(a > 0, b > 0), jnp.logical_xor(a > 0, b > 0), jnp.power(jnp.abs(a), b)))
# ── nn ──
prog("activations", [("x", [7], F)],
     lambda x: (jax.nn.relu(x), jax.nn.gelu(x, approximate=False), jax.nn.gelu(x, approximate=True), jax.nn.silu(x),
                jax.nn.sigmoid(x), jax.nn.softplus(x), jax.nn.elu(x), jax.nn.leaky_relu(x, 0.1), jax.nn.log_sigmoid(x),
                jax.nn.relu6(x * 4), jax.nn.selu(x), jax.nn.hard_tanh(x * 2), jax.nn.celu(x, 1.5)))
def layer_norm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps) * g + b
prog("norms", [("x", [3, 8], F), ("g", [8], F), ("b", [8], F)],
     lambda x, g, b: (layer_norm(x, g, b), layer_norm(x, 1.0, 0.0),
                      x / jnp.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g, jax.nn.standardize(x, axis=-1)))
prog("one_hot", [("i", [5], "i-1_4")], lambda i: jax.nn.one_hot(i, 4))
prog("conv_pool", [("x", [2, 3, 6, 6], F), ("w", [4, 3, 3, 3], F), ("b", [4], F)],
     lambda x, w, b: (lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1))) + b[None, :, None, None],
                      lax.conv_general_dilated(x, w, (2, 2), ((0, 0), (0, 0))),
                      lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID"),
                      lax.reduce_window(x, 0.0, lax.add, (1, 1, 3, 3), (1, 1, 3, 3), "VALID") / 9.0))
prog("convolve_1d", [("a", [6], F), ("v", [3], F)], lambda a, v: (jnp.convolve(a, v), jnp.correlate(a, v, mode="full")))
prog("misc", [("x", [3, 4], F), ("u", [3], F), ("w", [3], F)],
     lambda x, u, w: (jnp.diff(x, axis=1), jnp.cross(u, w), jnp.average(x, axis=0), jnp.ediff1d(u),
                      jnp.rot90(x), jnp.atleast_3d(u), jnp.logspace(0.0, 2.0, 3)))

# ── more jax.numpy names ──
prog("nan_reductions", [("x", [3, 5], "nan")],
     lambda x: (jnp.nansum(x, axis=1), jnp.nanmean(x, axis=1), jnp.nanmax(x, axis=1), jnp.nanmin(x), jnp.nanprod(x, axis=1),
                jnp.nanvar(x, axis=1), jnp.nanstd(x, axis=1, ddof=1), jnp.nanargmax(x, axis=1), jnp.nanargmin(x, axis=1),
                jnp.nancumsum(x, axis=1), jnp.nancumprod(x, axis=1), jnp.nan_to_num(x, nan=-7.0), jnp.isnan(x)))
prog("cumprod_quantile", [("x", [3, 7], F)],
     lambda x: (jnp.cumprod(x, axis=1), jnp.cumulative_prod(x[0]), jnp.quantile(x, 0.3, axis=1), jnp.percentile(x, 75.0),
                jnp.quantile(x, 0.5, axis=0, keepdims=True), jnp.cumulative_sum(x, axis=0)))
prog("searching", [("a", [6], F), ("v", [2, 3], F), ("i", [7], "i0_4")],
     lambda a, v, i: (jnp.searchsorted(jnp.sort(a), v), jnp.searchsorted(jnp.sort(a), jnp.sort(a)[2], side="right"),
                      jnp.digitize(v, jnp.sort(a)), jnp.isin(i, jnp.array([1, 3])), jnp.bincount(i, length=5),
                      jnp.array_equiv(v, v[0]), jnp.array_equal(v, v), jnp.allclose(v, v + 1e-9)))
prog("rearrange", [("x", [3, 4], F), ("y", [2], F)],
     lambda x, y: (jnp.append(x, x[:1], axis=0), jnp.append(x, y), jnp.delete(x, -1, axis=1), jnp.insert(x, 2, 9.0, axis=1),
                   *jnp.unstack(x, axis=1)[:2], jnp.rollaxis(jnp.reshape(x, (3, 2, 2)), 2), jnp.resize(y, (2, 3)),
                   jnp.diagflat(y, 1), jnp.fill_diagonal(x, 5.0, inplace=False), jnp.fliplr(x), jnp.flipud(x),
                   jnp.permute_dims(x, (1, 0)), jnp.atleast_1d(y[0]), jnp.atleast_2d(y), jnp.dstack([x, x]),
                   *jnp.hsplit(x, 2), *jnp.vsplit(x[:2], 2)))
prog("index_helpers", [("x", [3, 4], F)],
     lambda x: (jnp.indices((2, 3)), *jnp.tril_indices(3), *jnp.triu_indices(3, 1, 4), *jnp.tril_indices_from(x, -1),
                jnp.ravel_multi_index((jnp.array([1, 2]), jnp.array([3, 0])), (3, 4)),
                *jnp.unravel_index(jnp.array([5, 11, 0]), (3, 4)), *jnp.diag_indices(3)))
prog("numerical", [("x", [3, 5], F), ("p", [4], F), ("q", [2], F), ("t", [6], F)],
     lambda x, p, q, t: (jnp.trapezoid(x, dx=0.5, axis=1), jnp.gradient(x, axis=1), jnp.gradient(t), jnp.cov(x), jnp.corrcoef(x),
                         jnp.vander(q, 3), jnp.vander(t[:3], increasing=True), jnp.polyval(p, t), jnp.polyadd(p, q),
                         jnp.polysub(q, p), jnp.polymul(p, q), jnp.polyder(p), jnp.polyint(p)))
prog("windows", [("x", [1], F)],
     lambda x: (jnp.hamming(6), jnp.hanning(5), jnp.blackman(7), jnp.bartlett(6), jnp.linspace(0, 1, 4, endpoint=False),
                jnp.logspace(0, 1, 4, base=2.0), jnp.geomspace(1.0, 100.0, 3)))
prog("products_more", [("a", [2, 3, 4], F), ("v", [4], F), ("w", [3], F)],
     lambda a, v, w: (jnp.matvec(a, v), jnp.vecmat(w, a), jnp.vecdot(a, v), jnp.cross(a[0, :, :3], a[1, :, :3])))
prog("elementwise_more", [("x", [6], F), ("y", [6], F), ("k", [6], "i-3_4")],
     lambda x, y, k: (jnp.fabs(x), jnp.isneginf(x / 0.0), jnp.isposinf(x / 0.0), jnp.angle(x), jnp.invert(k),
                      jnp.bitwise_not(x > 0), *jnp.modf(x * 3), *jnp.divmod(x * 3, 0.7), jnp.ldexp(x, k),
                      jnp.float_power(jnp.abs(x), y), jnp.fmax(x, y), jnp.fmin(x, y), jnp.amax(x), jnp.amin(x),
                      jnp.logical_or(x > 0, y > 0), jnp.logical_not(x > 0), jnp.bitwise_and(k, 3), jnp.bitwise_or(k > 0, x > 0),
                      jnp.bitwise_xor(k, 5), jnp.signbit(x), jnp.positive(x), jnp.negative(x), jnp.rint(x * 2),
                      jnp.select([x > 0.5, x < -0.5], [x, y], -1.0), jnp.around(x, 1), jnp.true_divide(x, y),
                      jnp.subtract(x, y), jnp.multiply(x, 2.0), jnp.divide(k, 2), jnp.add(x, 1.0), jnp.isinf(x), jnp.isfinite(x)))
prog("meshgrid_bcast", [("x", [3], F), ("y", [2], F)],
     lambda x, y: (*jnp.meshgrid(x, y), *jnp.meshgrid(x, y, indexing="ij"), *jnp.broadcast_arrays(x[None, :], y[:, None])))

# ── transforms ──
def mlp_loss(x, w):
    return jnp.sum(jnp.tanh(x @ w))
prog("grad_mlp", [("x", [3, 4], F), ("w", [4, 2], F)],
     lambda x, w: (jax.grad(mlp_loss)(x, w), *jax.grad(mlp_loss, argnums=(0, 1))(x, w), jax.value_and_grad(mlp_loss)(x, w)[0]))
prog("grad_logsumexp_big", [("x", [6], "big")], lambda x: jax.grad(lambda x: jax.nn.logsumexp(x))(x))
prog("grad_softmax", [("x", [2, 5], F), ("c", [2, 5], F)],
     lambda x, c: jax.grad(lambda x: jnp.mean(jax.nn.softmax(x, axis=-1) * c))(x))
prog("grad_slice", [("x", [4, 6, 8], F)], lambda x: jax.grad(lambda x: jnp.sum(x[:, 1:4, ::2] ** 2) + jnp.sum(x[-1, ..., 3]))(x))
prog("grad_norm", [("x", [3, 8], F), ("g", [8], F), ("b", [8], F)],
     lambda x, g, b: jax.grad(lambda x, g: jnp.sum(layer_norm(x, g, b) ** 2), argnums=(0, 1))(x, g))
prog("grad_bcast", [("a", [3, 1], F), ("b", [4], F)],
     lambda a, b: jax.grad(lambda a, b: jnp.sum(jnp.sin(a * b) + a / (b * b + 1.0)), argnums=(0, 1))(a, b))
prog("grad_einsum_take", [("a", [3, 4], F), ("b", [4, 5], F), ("i", [2], "i0_3")],
     lambda a, b, i: jax.grad(lambda a: jnp.sum(jnp.take(jnp.einsum("ij,jk->ik", a, b), i, axis=0) ** 2))(a))
prog("jvp_sin", [("x", [5], F), ("v", [5], F)],
     lambda x, v: jax.jvp(lambda x: jnp.sin(x) * x, (x,), (v,)))
prog("jvp_two", [("x", [2, 3], F), ("w", [3, 2], F), ("vx", [2, 3], F), ("vw", [3, 2], F)],
     lambda x, w, vx, vw: jax.jvp(lambda x, w: jax.nn.softmax(x @ w, axis=-1), (x, w), (vx, vw)))
def hvp(f, x, v):
    return jax.jvp(jax.grad(f), (x,), (v,))[1]
prog("hvp_cubic", [("x", [4], F), ("v", [4], F)], lambda x, v: hvp(lambda x: jnp.sum(x ** 3) + jnp.sum(x) ** 2, x, v))
prog("hvp_logsumexp", [("x", [5], F), ("v", [5], F)], lambda x, v: hvp(lambda x: jax.nn.logsumexp(x), x, v))
prog("vmap_mv", [("x", [5, 3], F), ("w", [3, 2], F)],
     lambda x, w: jax.vmap(lambda x, w: jax.nn.softmax(x @ w), in_axes=(0, None))(x, w))
prog("vmap_axes", [("x", [3, 5], F), ("y", [5, 3], F)],
     lambda x, y: jax.vmap(lambda a, b: a * b + jnp.sum(a), in_axes=(1, 0), out_axes=1)(x, y))
prog("vmap_grad", [("x", [4, 3], F)],
     lambda x: jax.vmap(jax.grad(lambda r: jnp.sum(jnp.tanh(r) ** 2)))(x))
prog("grad_capture", [("x", [3], F), ("c", [3], F)],
     lambda x, c: jax.grad(lambda x: jnp.sum(x * c * x))(x))
prog("grad_nested_capture", [("x", [4], F), ("c", [4], F)],
     lambda x, c: jax.grad(lambda x: jnp.sum(jax.grad(lambda y: jnp.sum(jnp.sin(y * c) * x))(x)))(x))
prog("grad_grad", [("x", [], F)], lambda x: jax.grad(jax.grad(lambda x: jnp.sin(x) * x ** 3))(x))

out = pathlib.Path(__file__).resolve().parent.parent / "crates/rlx-tensor/tests/fixtures/programs.json"
out.write_text(json.dumps({"generator": "tools/gen_tensor_fixtures.py", "jax": jax.__version__, "programs": programs}))
print(f"wrote {len(programs)} programs to {out}")
