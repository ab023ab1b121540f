#!/usr/bin/env python3
"""Reference fixtures for crates/rlx-sparse (committed under crates/rlx-sparse/tests/fixtures/).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_sparse_fixtures.py

(numpy + scipy from ../shared/ref/setup.sh's venv). Seeds are fixed; a re-run writes the same
files.

- sparse.json: scipy.sparse products (spmv, spmm, A^T y), canonicalisation of unsorted /
  duplicated CSR arrays (sum_duplicates), spsolve on a general and an SPD system, cg on a 2-D
  Poisson matrix (plain and Jacobi-preconditioned; iteration counts from the callback), bicgstab
  on a convection-diffusion matrix, and a cg that runs out of iterations.
- *.npz: scipy.sparse.save_npz files (csr compressed, csc uncompressed, coo, float32 data,
  int64 indices) with their dense values in sparse.json.
"""
import json
import os

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spl

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-sparse", "tests", "fixtures")


def csr_json(a):
    a = sp.csr_matrix(a)
    return {"shape": list(a.shape), "indptr": a.indptr.tolist(), "indices": a.indices.tolist(),
            "data": a.data.tolist()}


def poisson2d(k):
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    i = sp.identity(k)
    return (sp.kron(i, t) + sp.kron(t, i)).tocsr()


def run_iter(solver, a, b, **kw):
    its = [0]

    def cb(_):
        its[0] += 1
    x, info = solver(a, b, callback=cb, **kw)
    return x, info, its[0]


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(5)
    fx = {}
    # products
    prods = []
    for m, n, dens, seed in [(7, 5, 0.4, 1), (40, 33, 0.1, 2), (200, 150, 0.02, 3), (3, 4, 0.0, 4)]:
        a = sp.random(m, n, density=dens, format="csr", random_state=seed, dtype=np.float64)
        x = rng.normal(size=n)
        y = rng.normal(size=m)
        bm = rng.normal(size=(n, 3))
        prods.append({**csr_json(a), "x": x.tolist(), "y": y.tolist(), "B": bm.ravel().tolist(),
                      "Ax": (a @ x).tolist(), "ATy": (a.T @ y).tolist(), "AB": (a @ bm).ravel().tolist()})
    fx["products"] = prods
    # unsorted indices with duplicates -> scipy's canonical form
    indptr = [0, 3, 3, 7]
    indices = [2, 0, 2, 3, 1, 3, 0]
    data = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    a = sp.csr_matrix((np.array(data), np.array(indices), np.array(indptr)), shape=(3, 4))
    a.sum_duplicates()
    fx["canonical"] = {"shape": [3, 4], "indptr": indptr, "indices": indices, "data": data,
                       "canonical": csr_json(a), "dense": a.toarray().ravel().tolist()}
    # direct solves
    n = 60
    g = sp.random(n, n, density=0.08, random_state=7, format="csr") + sp.identity(n) * 4.0
    b = rng.normal(size=n)
    spd = poisson2d(8)
    b2 = rng.normal(size=spd.shape[0])
    b3 = rng.normal(size=(n, 2))
    fx["direct"] = {"general": {**csr_json(g), "b": b.tolist(), "x": spl.spsolve(g.tocsc(), b).tolist(),
                                "B": b3.ravel().tolist(), "X": spl.spsolve(g.tocsc(), b3).ravel().tolist()},
                    "spd": {**csr_json(spd), "b": b2.tolist(), "x": spl.spsolve(spd.tocsc(), b2).tolist()}}
    # iterative
    p = poisson2d(30)
    bp = rng.normal(size=p.shape[0])
    x_cg, info, its = run_iter(spl.cg, p, bp, rtol=1e-8)
    assert info == 0
    m = sp.diags(1.0 / p.diagonal())
    x_pcg, info_p, its_p = run_iter(spl.cg, p, bp, rtol=1e-8, M=m)
    assert info_p == 0
    x_short, info_s, _ = run_iter(spl.cg, p, bp, rtol=1e-8, maxiter=5)
    k = 20
    cd = (poisson2d(k) + 0.4 * sp.kron(sp.identity(k), sp.diags([-1.0, 1.0], [-1, 1], shape=(k, k)))).tocsr()
    bc = rng.normal(size=cd.shape[0])
    x_bi, info_b, its_b = run_iter(spl.bicgstab, cd, bc, rtol=1e-8)
    assert info_b == 0
    x_bip, info_bp, its_bp = run_iter(spl.bicgstab, cd, bc, rtol=1e-8, M=sp.diags(1.0 / cd.diagonal()))
    fx["iterative"] = {
        "poisson": {**csr_json(p), "b": bp.tolist(), "cg_x": x_cg.tolist(), "cg_iterations": its,
                    "pcg_x": x_pcg.tolist(), "pcg_iterations": its_p, "short_info": int(info_s),
                    "short_x": x_short.tolist()},
        "convdiff": {**csr_json(cd), "b": bc.tolist(), "bicgstab_x": x_bi.tolist(), "bicgstab_iterations": its_b,
                     "pbicgstab_x": x_bip.tolist(), "pbicgstab_iterations": its_bp, "pinfo": int(info_bp)},
    }
    # npz files written by scipy
    base = sp.random(9, 6, density=0.3, random_state=11, format="csr")
    files = []
    for name, mat, compressed in [("csr_compressed.npz", base, True), ("csc_plain.npz", base.tocsc(), False),
                                  ("coo.npz", base.tocoo(), True), ("csr_f32.npz", base.astype(np.float32), True)]:
        sp.save_npz(os.path.join(OUT, name), mat, compressed=compressed)
        files.append({"file": name, "format": mat.format, "dense": mat.toarray().astype(np.float64).ravel().tolist()})
    big = base.copy()
    big.indices = big.indices.astype(np.int64)
    big.indptr = big.indptr.astype(np.int64)
    sp.save_npz(os.path.join(OUT, "csr_int64.npz"), big, compressed=False)
    files.append({"file": "csr_int64.npz", "format": "csr", "dense": base.toarray().ravel().tolist()})
    fx["npz"] = {"shape": [9, 6], "files": files}
    path = os.path.join(OUT, "sparse.json")
    with open(path, "w") as f:
        json.dump(fx, f, separators=(",", ":"))
    print("wrote", os.path.relpath(path), os.path.getsize(path), "bytes; cg its", its, its_p, "bicgstab", its_b, its_bp)


if __name__ == "__main__":
    main()
