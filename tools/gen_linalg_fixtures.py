#!/usr/bin/env python3
"""Reference fixtures for crates/rlx-linalg (tests/linalg_parity.rs).

Re-run from the repository root:

    ~/.cache/rlx-ref/venv/bin/python tools/gen_linalg_fixtures.py

Writes crates/rlx-linalg/tests/fixtures/linalg.json: for each case the op,
its attributes, f32 / f64 inputs, the forward outputs from numpy / scipy,
and derivatives from JAX (x64): jax.vjp with the given cotangents and
jax.jvp with the given tangents. Cases: random, batched, ill-conditioned
(Hilbert) and degenerate (not positive definite, singular) inputs.
"""
import json
import os

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import scipy.linalg as sl

jax.config.update("jax_enable_x64", True)
rng = np.random.default_rng(20261204)
OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-linalg", "tests", "fixtures", "linalg.json")


def spd(batch, n):
    m = rng.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def general(batch, n):
    return rng.standard_normal(batch + (n, n)) + 2.0 * np.eye(n)


def hilbert(n):
    i = np.arange(n)
    return 1.0 / (i[:, None] + i[None, :] + 1.0)


def jax_fn(op, attrs):
    """The JAX function of `op`, returning a tuple of outputs."""
    if op == "cholesky":
        return lambda a: (jnp.linalg.cholesky(a),)
    if op == "solve_triangular":
        return lambda a, b: (jsl.solve_triangular(a, b, lower=attrs["lower"], trans=1 if attrs["trans"] else 0),)
    if op == "solve":
        return lambda a, b: (jnp.linalg.solve(a, b),)
    if op == "inv":
        return lambda a: (jnp.linalg.inv(a),)
    if op == "det":
        return lambda a: (jnp.linalg.det(a),)
    if op == "slogdet":
        return lambda a: tuple(jnp.linalg.slogdet(a))
    if op == "eigh":
        return lambda a: eigh_canonical(jnp, *jnp.linalg.eigh(a), stop=jax.lax.stop_gradient)
    if op == "qr":
        return lambda a: qr_canonical(jnp, *jnp.linalg.qr(a), stop=jax.lax.stop_gradient)
    if op == "matrix_power":
        return lambda a: (jnp.linalg.matrix_power(a, attrs["k"]),)
    if op == "expm":
        return lambda a: (jsl.expm(a),)
    if op == "lu":
        return lambda a: tuple(jax.vmap(jsl.lu)(a) if a.ndim == 3 else jsl.lu(a))
    if op == "pinv":
        return lambda a: (jnp.linalg.pinv(a, rtol=attrs["rcond"]),)
    if op == "svd":
        return lambda a: svd_canonical(jnp, *jnp.linalg.svd(a, full_matrices=False), stop=jax.lax.stop_gradient)
    if op == "lstsq":
        return lambda a, b: (jnp.linalg.lstsq(a, b)[0],)
    raise ValueError(op)


def eigh_canonical(xp, w, v, stop=lambda x: x):
    """Each eigenvector column's largest-magnitude entry (first on ties) positive."""
    idx = xp.argmax(xp.abs(v), axis=-2)
    pick = xp.take_along_axis(v, idx[..., None, :], axis=-2)
    s = stop(xp.where(pick < 0, -1.0, 1.0))
    return w, v * s


def svd_canonical(xp, u, s, vt, stop=lambda x: x):
    """Each U column's largest-magnitude entry positive, Vt's row flipped with it."""
    idx = xp.argmax(xp.abs(u), axis=-2)
    pick = xp.take_along_axis(u, idx[..., None, :], axis=-2)
    sg = stop(xp.where(pick < 0, -1.0, 1.0))
    return u * sg, s, vt * xp.swapaxes(sg, -1, -2)


def qr_canonical(xp, q, r, stop=lambda x: x):
    """R with a non-negative diagonal."""
    d = xp.diagonal(r, axis1=-2, axis2=-1)
    s = stop(xp.where(d < 0, -1.0, 1.0))
    return q * s[..., None, :], r * s[..., :, None]


def np_forward(op, attrs, xs):
    """The numpy / scipy reference of the forward outputs."""
    if op == "cholesky":
        a = xs[0]
        return [np.linalg.cholesky(0.5 * (a + np.swapaxes(a, -1, -2)))]
    if op == "solve_triangular":
        a, b = xs
        if a.ndim == 2:
            return [sl.solve_triangular(a, b, lower=attrs["lower"], trans=1 if attrs["trans"] else 0)]
        return [np.stack([sl.solve_triangular(a[i], b[i], lower=attrs["lower"], trans=1 if attrs["trans"] else 0)
                          for i in range(a.shape[0])])]
    if op == "solve":
        return [np.linalg.solve(*xs)]
    if op == "inv":
        return [np.linalg.inv(xs[0])]
    if op == "det":
        return [np.linalg.det(xs[0])]
    if op == "slogdet":
        s, l = np.linalg.slogdet(xs[0])
        return [s, l]
    if op == "eigh":
        a = xs[0]
        return list(eigh_canonical(np, *np.linalg.eigh(0.5 * (a + np.swapaxes(a, -1, -2)))))
    if op == "qr":
        return list(qr_canonical(np, *np.linalg.qr(xs[0])))
    if op == "matrix_power":
        return [np.linalg.matrix_power(xs[0], attrs["k"])]
    if op == "expm":
        a = xs[0]
        return [sl.expm(a) if a.ndim == 2 else np.stack([sl.expm(m) for m in a])]
    if op == "lu":
        a = xs[0]
        if a.ndim == 2:
            return list(sl.lu(a))
        return [np.stack(t) for t in zip(*[sl.lu(m) for m in a])]
    if op == "pinv":
        return [np.linalg.pinv(xs[0], rcond=attrs["rcond"])]
    if op == "svd":
        return list(svd_canonical(np, *np.linalg.svd(xs[0], full_matrices=False)))
    if op == "lstsq":
        return [np.linalg.lstsq(xs[0], xs[1], rcond=None)[0]]
    raise ValueError(op)


def enc(x):
    x = np.asarray(x, dtype=np.float64)
    return {"dims": list(x.shape), "data": [v if np.isfinite(v) else str(v) for v in x.reshape(-1).tolist()]}


def case(name, op, xs, attrs=None, dtype="f64", rtol=1e-9, atol=1e-9, derivs=True):
    attrs = attrs or {}
    if dtype == "f32":
        xs = [np.asarray(x, np.float32).astype(np.float64) for x in xs]
    fwd = np_forward(op, attrs, xs)
    c = {"name": name, "op": op, "attrs": attrs, "dtype": dtype, "rtol": rtol, "atol": atol,
         "inputs": [enc(x) for x in xs], "outputs": [enc(y) for y in fwd]}
    if derivs:
        f = jax_fn(op, attrs)
        jx = [jnp.asarray(x) for x in xs]
        outs, pullback = jax.vjp(f, *jx)
        cts = [rng.standard_normal(np.shape(o)) for o in outs]
        vjp = pullback(tuple(jnp.asarray(ct) for ct in cts))
        tans = [rng.standard_normal(x.shape) for x in xs]
        _, jvp = jax.jvp(f, tuple(jx), tuple(jnp.asarray(t) for t in tans))
        c.update({"cotangents": [enc(ct) for ct in cts], "vjp": [enc(v) for v in vjp],
                  "tangents": [enc(t) for t in tans], "jvp": [enc(t) for t in jvp]})
    return c


cases = []
for op in ["cholesky", "inv", "det", "slogdet"]:
    make = spd if op == "cholesky" else general
    cases.append(case(f"{op}_4", op, [make((), 4)]))
    cases.append(case(f"{op}_batched", op, [make((2, 3), 3)]))
    cases.append(case(f"{op}_f32", op, [make((2,), 3)], dtype="f32", rtol=2e-5, atol=2e-5))
    # Hilbert(6): cond ~ 1.5e7, so results carry ~1e-9 relative error in f64.
    cases.append(case(f"{op}_hilbert6", op, [hilbert(6) + (0 if op == "cholesky" else 0)], rtol=1e-6, atol=1e-6))
for lower in [True, False]:
    for trans in [False, True]:
        attrs = {"lower": lower, "trans": trans}
        tag = f"{'lower' if lower else 'upper'}{'_trans' if trans else ''}"
        # A full matrix: only the named triangle may be read.
        cases.append(case(f"solve_triangular_{tag}", "solve_triangular", [general((), 4), rng.standard_normal((4, 2))], attrs))
        cases.append(case(f"solve_triangular_{tag}_batched", "solve_triangular",
                          [general((3,), 3), rng.standard_normal((3, 3, 2))], attrs))
cases.append(case("solve_triangular_f32", "solve_triangular", [general((), 3), rng.standard_normal((3, 1))],
                  {"lower": True, "trans": False}, dtype="f32", rtol=2e-5, atol=2e-5))
cases.append(case("solve_4", "solve", [general((), 4), rng.standard_normal((4, 3))]))
cases.append(case("solve_batched", "solve", [general((2, 2), 3), rng.standard_normal((2, 2, 3, 1))]))
cases.append(case("solve_f32", "solve", [general((), 3), rng.standard_normal((3, 2))], dtype="f32", rtol=2e-5, atol=2e-5))
cases.append(case("solve_hilbert6", "solve", [hilbert(6), rng.standard_normal((6, 1))], rtol=1e-6, atol=1e-6))

def sym(batch, n):
    m = rng.standard_normal(batch + (n, n))
    return m + np.swapaxes(m, -1, -2)


cases.append(case("eigh_4", "eigh", [sym((), 4)]))
cases.append(case("eigh_nonsymmetric", "eigh", [rng.standard_normal((3, 3))]))
cases.append(case("eigh_batched", "eigh", [sym((2,), 3)]))
cases.append(case("eigh_f32", "eigh", [sym((), 3)], dtype="f32", rtol=1e-4, atol=1e-4))
cases.append(case("eigh_hilbert6", "eigh", [hilbert(6)], rtol=1e-6, atol=1e-6))
cases.append(case("qr_tall", "qr", [rng.standard_normal((5, 3))]))
cases.append(case("qr_square_batched", "qr", [rng.standard_normal((2, 4, 4))]))
cases.append(case("qr_f32", "qr", [rng.standard_normal((4, 2))], dtype="f32", rtol=1e-4, atol=1e-4))
cases.append(case("qr_wide", "qr", [rng.standard_normal((3, 5))], derivs=False))
cases.append(case("eigh_repeated", "eigh", [np.diag([1.0, 1.0, 2.0])], derivs=False))

for k in [0, 1, 5, -3]:
    cases.append(case(f"matrix_power_{k}", "matrix_power", [0.5 * general((2,), 3)], {"k": k}))

cases.append(case("expm_3", "expm", [rng.standard_normal((3, 3))]))
cases.append(case("expm_large_norm", "expm", [4.0 * rng.standard_normal((4, 4))], rtol=1e-8, atol=1e-8))
cases.append(case("expm_batched", "expm", [0.3 * rng.standard_normal((2, 3, 3))]))
cases.append(case("svd_tall", "svd", [rng.standard_normal((5, 3))]))
cases.append(case("svd_wide", "svd", [rng.standard_normal((3, 4))]))
cases.append(case("svd_square_batched", "svd", [rng.standard_normal((2, 3, 3))]))
cases.append(case("svd_f32", "svd", [rng.standard_normal((4, 3))], dtype="f32", rtol=1e-4, atol=1e-4))
cases.append(case("lu_4", "lu", [rng.standard_normal((4, 4))]))
cases.append(case("lu_batched", "lu", [rng.standard_normal((2, 3, 3))]))
cases.append(case("lu_f32", "lu", [rng.standard_normal((3, 3))], dtype="f32", rtol=2e-5, atol=2e-5))
cases.append(case("pinv_tall", "pinv", [rng.standard_normal((4, 3))], {"rcond": 1e-15}))
cases.append(case("pinv_wide_batched", "pinv", [rng.standard_normal((2, 2, 3))], {"rcond": 1e-15}))
rank1 = np.outer([1.0, 2.0, 3.0], [1.0, -1.0])
cases.append(case("pinv_rank_deficient", "pinv", [rank1], {"rcond": 1e-10}, derivs=False))
cases.append(case("lstsq_tall", "lstsq", [rng.standard_normal((6, 3)), rng.standard_normal((6, 2))]))

# Degenerate inputs: forward only (JAX / numpy give NaN, 0 or -inf).
not_pd = np.array([[1.0, 2.0], [2.0, 1.0]])
singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])
c = case("cholesky_not_pd", "cholesky", [spd((), 2)], derivs=False)
c["inputs"] = [enc(not_pd)]
c["outputs"] = [enc(np.asarray(jnp.linalg.cholesky(jnp.asarray(not_pd))))]  # JAX: all NaN
cases.append(c)
cases.append(case("det_singular", "det", [singular], derivs=False))
cases.append(case("slogdet_singular", "slogdet", [singular], derivs=False))
# Appended last so the cases above keep their random draws.
cases.append(case("expm_f32", "expm", [0.5 * rng.standard_normal((2, 3, 3))], dtype="f32", rtol=1e-5, atol=1e-5))

with open(OUT, "w") as f:
    json.dump({"generator": "tools/gen_linalg_fixtures.py", "cases": cases}, f, separators=(",", ":"))
print(f"{len(cases)} cases -> {OUT} ({os.path.getsize(OUT)} bytes)")
