#!/usr/bin/env python3
"""spmv and 100 CG iterations on the same 2-D Poisson matrix (~1M non-zeros): rlx-sparse vs scipy.

    ~/.cache/rlx-ref/venv/bin/python tools/bench_sparse.py [k]

Runs the release example (best of 50 spmv, best of 3 CG runs), then scipy the same way, and
prints the ratios. Each pair times the same work:
- spmv: `A @ x` (allocates and zero-fills its output; so does rlx's `spmv`);
- spmv_into: scipy's `csr_matvec` kernel (what `A @ x` calls) into a preallocated `y` vs rlx's
  `spmv_into` (no allocation on either side);
- spmv f32: `A @ x` on float32 copies;
- cg: `scipy.sparse.linalg.cg(..., rtol=0, maxiter=100)`.
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
from scipy.sparse._sparsetools import csr_matvec

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
k = int(sys.argv[1]) if len(sys.argv) > 1 else 448
out = subprocess.run(["cargo", "run", "--release", "-q", "-p", "rlx-sparse", "--example", "sparse_bench", "--", str(k)],
                     cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
print(out)
r_spmv = float(re.search(r"spmv ([0-9.]+) ms", out).group(1))
r_into = float(re.search(r"spmv_into ([0-9.]+) ms", out).group(1))
r_f32 = float(re.search(r"spmv f32 ([0-9.]+) ms", out).group(1))
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


s_spmv = best(50, lambda: a @ x)
y = np.zeros(n)
# csr_matvec accumulates (y += A x): the same loads and stores as an overwrite.
s_into = best(50, lambda: csr_matvec(n, n, a.indptr, a.indices, a.data, x, y))
a32, x32 = a.astype(np.float32), x.astype(np.float32)
s_f32 = best(50, lambda: a32 @ x32)
s_cg = best(3, lambda: spl.cg(a, x, rtol=0.0, atol=0.0, maxiter=100))
print(f"scipy poisson k={k}: n={n} nnz={a.nnz} spmv {s_spmv:.3f} ms, spmv_into {s_into:.3f} ms, "
      f"spmv f32 {s_f32:.3f} ms, cg x100 {s_cg:.1f} ms")
print(f"ratio rlx / scipy: spmv {r_spmv / s_spmv:.3f}, spmv_into {r_into / s_into:.3f}, "
      f"spmv f32 {r_f32 / s_f32:.3f}, cg {r_cg / s_cg:.3f}")
