#!/usr/bin/env python3
"""Delaunay of the same 1M uniform random points: rlx-geo vs scipy.spatial.Delaunay (qhull), one run.

    ~/.cache/rlx-ref/venv/bin/python tools/bench_geo.py [N]

Writes the points to a temporary file, runs the release example on them, then times scipy
(best of 3, one thread: qhull is single-threaded) and prints the ratio.
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.spatial import Delaunay

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
pts = np.random.default_rng(0).random((n, 2))
with tempfile.NamedTemporaryFile(suffix=".f64", delete=False) as f:
    f.write(pts.astype("<f8").tobytes())
out = subprocess.run(["cargo", "run", "--release", "-q", "-p", "rlx-geo", "--example", "delaunay_bench", "--",
                      str(n), f.name], cwd=ROOT, check=True, capture_output=True, text=True).stdout
print(out.strip())
rlx = float(re.search(r"best of 3: ([0-9.]+) s", out).group(1))
best = float("inf")
for _ in range(3):
    t = time.perf_counter()
    tri = Delaunay(pts)
    best = min(best, time.perf_counter() - t)
print(f"scipy Delaunay: {n} points, {len(tri.simplices)} triangles, best of 3: {best:.3f} s")
print(f"ratio rlx / scipy: {rlx / best:.3f}")
os.unlink(f.name)
