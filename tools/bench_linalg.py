#!/usr/bin/env python3
"""Dense linalg at n = 512 (f64 and f32): rlx-linalg (faer, through a compiled graph) vs numpy / scipy.

    ~/.cache/rlx-ref/venv/bin/python tools/bench_linalg.py [n] [reps]

Runs the release example `linalg_bench` (best of `reps` runs per op, input copies included),
then numpy / scipy on a same-size SPD matrix the same way, and prints one row per op and dtype
with the ratio rlx / numpy. Both sides run on one thread by default (rlx-linalg's faer is built
without rayon and called with Par::Seq; OPENBLAS_NUM_THREADS=1 for numpy), so the ratio compares
kernels, not core counts. `OPENBLAS_NUM_THREADS=2 ... bench_linalg.py` gives numpy two threads
(rlx stays on one); the header says which.
"""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import re
import subprocess
import sys
import time

import numpy as np
import scipy.linalg as sl

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 512
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
out = subprocess.run(["cargo", "run", "--release", "-q", "-p", "rlx-linalg", "--example", "linalg_bench", "--",
                      str(n), str(reps)], cwd=ROOT, check=True, capture_output=True, text=True).stdout
ours = {(m.group(1), m.group(2)): float(m.group(3)) for m in re.finditer(r"rlx (\w+) (\w+) ([0-9.]+) ms", out)}

rng = np.random.default_rng(0)
m = rng.uniform(-0.5, 0.5, size=(n, n))
a64 = m @ m.T / n + np.eye(n)
b64 = rng.uniform(-1, 1, size=(n, 16))
ops = {
    "cholesky": lambda a, b: np.linalg.cholesky(a),
    "solve": lambda a, b: np.linalg.solve(a, b),
    "lu": lambda a, b: sl.lu(a),
    "qr": lambda a, b: np.linalg.qr(a),
    "eigh": lambda a, b: np.linalg.eigh(a),
    "svd": lambda a, b: np.linalg.svd(a, full_matrices=False),
    "inv": lambda a, b: np.linalg.inv(a),
    "det": lambda a, b: np.linalg.det(a),
}


def best(f):
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return t * 1e3


threads = os.environ["OPENBLAS_NUM_THREADS"]
print(f"n={n}, best of {reps}, rlx 1 thread, numpy {threads} thread(s) (load {os.getloadavg()[0]:.1f})")
print("| op | dtype | rlx ms | numpy/scipy ms | ratio |")
print("|---|---|---|---|---|")
for dtype, npd in [("f64", np.float64), ("f32", np.float32)]:
    a, b = a64.astype(npd), b64.astype(npd)
    for name, f in ops.items():
        ref = best(lambda: f(a, b))
        r = ours[(dtype, name)]
        print(f"| {name} | {dtype} | {r:.2f} | {ref:.2f} | {r / ref:.2f}x |")
