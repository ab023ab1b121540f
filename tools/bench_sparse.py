#!/usr/bin/env python3
"""spmv and 100 CG iterations on the same 2-D Poisson matrix (~1M non-zeros): rlx-sparse vs scipy.

    ~/.cache/rlx-ref/venv/bin/python tools/bench_sparse.py [k]

Runs the release example (best of 20 spmv, best of 3 CG runs), then scipy's `A @ x` and
`scipy.sparse.linalg.cg(..., rtol=0, maxiter=100)` the same way, and prints the ratios.
"""
import os

# One thread each side: rlx-sparse's products are single-threaded, and OpenBLAS's spinning
# threads make scipy's CG erratic on a loaded machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import re
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spl

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
k = int(sys.argv[1]) if len(sys.argv) > 1 else 448
out = subprocess.run(["cargo", "run", "--release", "-q", "-p", "rlx-sparse", "--example", "sparse_bench", "--", str(k)],
                     cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
print(out)
r_spmv = float(re.search(r"spmv ([0-9.]+) ms", out).group(1))
r_cg = float(re.search(r"cg x100 ([0-9.]+) ms", out).group(1))
t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
i = sp.identity(k)
a = (sp.kron(i, t) + sp.kron(t, i)).tocsr()
a.sum_duplicates()
n = a.shape[0]
x = ((np.arange(n) % 17) - 8.0) / 8.0


def best(reps, f):
    b = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        b = min(b, time.perf_counter() - t0)
    return b * 1e3


s_spmv = best(20, lambda: a @ x)
s_cg = best(3, lambda: spl.cg(a, x, rtol=0.0, atol=0.0, maxiter=100))
print(f"scipy poisson k={k}: n={n} nnz={a.nnz} spmv {s_spmv:.3f} ms, cg x100 {s_cg:.1f} ms")
print(f"ratio rlx / scipy: spmv {r_spmv / s_spmv:.3f}, cg {r_cg / s_cg:.3f}")
