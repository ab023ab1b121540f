#!/usr/bin/env python3
"""Dense references for rlx-sparse's row loops at every row-length regime
(crates/rlx-sparse/tests/fixtures/kernel_rows.json, read by tests/kernel_rows.rs).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_sparse_kernel_fixtures.py

One CSR matrix whose rows hold 0, 1, 3, 4, 5, 15, 16, 17 and 40 entries (the
short single-accumulator loop, the four-accumulator loop from 16 entries, and
its remainders), random sorted columns out of 48, seeded. The references are
numpy *dense* products (A @ x, A @ B, A.T @ y, and (G @ B.T) at the stored
entries), in float64 and from float32-rounded inputs for the f32 checks.
"""
import json
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-sparse", "tests",
                   "fixtures", "kernel_rows.json")
ROW_LENGTHS = [0, 1, 3, 4, 5, 15, 16, 17, 40]
NCOLS = 48
K = 3


def main():
    rng = np.random.default_rng(22)
    indptr, indices = [0], []
    for n in ROW_LENGTHS:
        indices += sorted(rng.choice(NCOLS, size=n, replace=False).tolist())
        indptr.append(len(indices))
    m = len(ROW_LENGTHS)
    fx = {"shape": [m, NCOLS], "indptr": indptr, "indices": indices, "k": K}
    data = rng.normal(size=len(indices))
    x = rng.normal(size=NCOLS)
    y = rng.normal(size=m)
    b = rng.normal(size=(NCOLS, K))
    g = rng.normal(size=(m, K))
    for name, dt in [("f64", np.float64), ("f32", np.float32)]:
        # f32 inputs rounded first; the reference is their exact-ish float64 product.
        d, xx, yy, bb, gg = (v.astype(dt).astype(np.float64) for v in (data, x, y, b, g))
        dense = np.zeros((m, NCOLS))
        for i in range(m):
            for p in range(indptr[i], indptr[i + 1]):
                dense[i, indices[p]] = d[p]
        rows = np.repeat(np.arange(m), np.diff(indptr))
        fx[name] = {
            "data": d.tolist(), "x": xx.tolist(), "y": yy.tolist(), "B": bb.ravel().tolist(),
            "G": gg.ravel().tolist(),
            "Ax": (dense @ xx).tolist(), "AB": (dense @ bb).ravel().tolist(), "ATy": (dense.T @ yy).tolist(),
            "GBt": (gg @ bb.T)[rows, np.array(indices, dtype=int)].tolist(),
        }
    with open(OUT, "w") as f:
        json.dump(fx, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
