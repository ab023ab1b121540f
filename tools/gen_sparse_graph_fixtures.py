#!/usr/bin/env python3
"""Reference fixtures for the sparse graph ops (crates/rlx-sparse/tests/fixtures/sparse_graph.json).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_sparse_graph_fixtures.py

Forward values from scipy.sparse (`A @ x`, `A.T @ y`, `A @ X`, `A.T @ Y`); vjps and jvps from
JAX on the dense equivalent restricted to the pattern (A = zeros.at[rows, cols].add(values), so a
duplicated entry is its own value), in float64 (float32 cases are rounded inputs with
float32 references). The seed is fixed; a re-run writes the same file.
"""
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

jax.config.update("jax_enable_x64", True)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-sparse", "tests", "fixtures",
                   "sparse_graph.json")
rng = np.random.default_rng(22)


def rows_of(indptr):
    return np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))


def patterns():
    a = sp.random(6, 5, density=0.4, format="csr", random_state=3)
    yield "random_6x5", 6, 5, a.indptr, a.indices
    # unsorted columns, duplicates, an empty row
    yield "unsorted_dup_3x4", 3, 4, np.array([0, 3, 3, 7]), np.array([2, 0, 2, 3, 1, 3, 0])


def t(arr):
    arr = np.asarray(arr)
    return {"dims": list(arr.shape), "data": arr.ravel().tolist()}


def case(name, dtype, m, n, indptr, indices, op, trans, k):
    npd = np.float32 if dtype == "f32" else np.float64
    rows = rows_of(indptr)
    nnz = len(indices)
    v = rng.normal(size=nnz).astype(npd)

    def dense_a(vals):
        return jnp.zeros((m, n), vals.dtype).at[rows, indices].add(vals)

    if op == "sddmm":
        shape_a, shape_b = ((m,), (n,)) if k is None else ((m, k), (n, k))
        diff = [rng.normal(size=shape_a).astype(npd), rng.normal(size=shape_b).astype(npd)]

        def f(a, b):
            return jnp.sum(a[rows] * b[indices], axis=-1) if a.ndim == 2 else a[rows] * b[indices]
        out = np.asarray(f(*diff))
    else:
        inner = m if trans else n
        xshape = (inner,) if op == "spmv" else (inner, k)
        diff = [v, rng.normal(size=xshape).astype(npd)]
        sa = sp.csr_matrix((v, indices, indptr), shape=(m, n))
        out = (sa.T @ diff[1]) if trans else (sa @ diff[1])

        def f(vals, x):
            a = dense_a(vals)
            return (a.T if trans else a) @ x
    ct = rng.normal(size=out.shape).astype(npd)
    _, pull = jax.vjp(f, *[jnp.asarray(d) for d in diff])
    vjp = pull(jnp.asarray(ct))
    tangents = [rng.normal(size=d.shape).astype(npd) for d in diff]
    _, jvp = jax.jvp(f, tuple(jnp.asarray(d) for d in diff), tuple(jnp.asarray(d) for d in tangents))
    return {"name": name, "dtype": dtype, "op": op, "trans": trans, "nrows": m, "ncols": n,
            "indptr": indptr.tolist(), "indices": indices.tolist(), "values": t(v),
            "diff": [t(d) for d in diff], "out": t(out), "ct": t(ct), "vjp": [t(g) for g in vjp],
            "tangents": [t(d) for d in tangents], "jvp": t(jvp)}


def composite(m, n, indptr, indices):
    """loss = sum(tanh(A @ X) ** 2) + sum(A^T y): grads w.r.t. values, X and y."""
    rows = rows_of(indptr)
    v = rng.normal(size=len(indices))
    x = rng.normal(size=(n, 3))
    y = rng.normal(size=m)

    def loss(vals, xx, yy):
        a = jnp.zeros((m, n)).at[rows, indices].add(vals)
        return jnp.sum(jnp.tanh(a @ xx) ** 2) + jnp.sum(a.T @ yy)
    val, grads = jax.value_and_grad(loss, argnums=(0, 1, 2))(v, x, y)
    return {"nrows": m, "ncols": n, "indptr": indptr.tolist(), "indices": indices.tolist(), "values": t(v),
            "x": t(x), "y": t(y), "loss": float(val), "grads": [t(g) for g in grads]}


def main():
    cases = []
    for pname, m, n, indptr, indices in patterns():
        for op, trans, k in [("spmv", False, None), ("spmv", True, None), ("spmm", False, 3), ("spmm", True, 2),
                             ("sddmm", False, None), ("sddmm", False, 3)]:
            name = f"{op}{'_t' if trans else ''}{'' if k is None else f'_k{k}'}_{pname}"
            cases.append(case(name, "f64", m, n, indptr, indices, op, trans, k))
    _, m, n, indptr, indices = next(patterns())
    cases.append(case("spmv_f32_random_6x5", "f32", m, n, indptr, indices, "spmv", False, None))
    cases.append(case("spmm_t_f32_random_6x5", "f32", m, n, indptr, indices, "spmm", True, 4))
    # vmap: A @ x_i for a batch of 3 vectors (scipy's A @ X^T, transposed)
    a = sp.csr_matrix((rng.normal(size=len(indices)), indices, indptr), shape=(m, n))
    xb = rng.normal(size=(3, n))
    xb3 = rng.normal(size=(2, n, 4))
    vmap = {"nrows": m, "ncols": n, "indptr": indptr.tolist(), "indices": indices.tolist(),
            "values": t(a.data), "xb": t(xb), "out": t((a @ xb.T).T),
            "xb3": t(xb3), "out3": t(np.stack([a @ xi for xi in xb3]))}
    doc = {"generator": "tools/gen_sparse_graph_fixtures.py", "cases": cases,
           "composite": composite(m, n, indptr, indices), "vmap": vmap}
    with open(OUT, "w") as f:
        json.dump(doc, f)
    print(f"wrote {OUT}: {len(cases)} cases")


if __name__ == "__main__":
    main()
