#!/usr/bin/env python3
"""UMAP fit on digits (1,797 x 64, n_neighbors 15, min_dist 0.1, 2D): rlx-umap vs umap-learn,
side by side in one run, with the trustworthiness (k = 5) of each embedding.

    cargo build --release -p rlx-umap --example umap_digits
    ~/.cache/rlx-ref/venv/bin/python tools/bench_umap.py [--repeats 5]

umap-learn runs once first to warm up its numba JIT (not timed); then each side runs `repeats`
times (same seeds 0.. for umap-learn, rlx-umap's default seed) and the medians are compared.
Both are single-threaded here: umap-learn with a random_state runs its SGD serially, and
rlx-umap has no threads.
"""
import argparse
import gzip
import os
import statistics
import subprocess
import time

import numpy as np
import umap
from sklearn.manifold import trustworthiness

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


def load_digits():
    with gzip.open(os.path.join(ROOT, "crates", "rlx", "examples", "data", "digits", "digits.csv.gz"), "rt") as f:
        return np.array([[float(v) for v in line.split(",")[:64]] for line in f if line.strip()])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    x = load_digits()
    umap.UMAP(n_neighbors=15, min_dist=0.1, random_state=0, n_epochs=10).fit_transform(x)  # JIT warm-up
    ref_t, ref_q = [], []
    for seed in range(args.repeats):
        t0 = time.perf_counter()
        e = umap.UMAP(n_neighbors=15, min_dist=0.1, n_components=2, random_state=seed).fit_transform(x)
        ref_t.append(time.perf_counter() - t0)
        ref_q.append(trustworthiness(x, e, n_neighbors=5))
    exe = os.path.join(TARGET, "release", "examples", "umap_digits")
    ours_t, ours_q = [], []
    for _ in range(args.repeats):
        out = subprocess.run([exe, "--bench"], check=True, capture_output=True, text=True).stdout.split()
        ours_t.append(float(out[0]))
        ours_q.append(float(out[1]))
    rt, ot = statistics.median(ref_t), statistics.median(ours_t)
    print(f"umap-learn {umap.__version__}: fit {rt:.3f}s (median of {args.repeats}), trustworthiness {statistics.mean(ref_q):.4f}")
    print(f"rlx-umap:        fit {ot:.3f}s (median of {args.repeats}), trustworthiness {statistics.mean(ours_q):.4f}")
    print(f"ratio rlx / umap-learn: {ot / rt:.2f}x")


if __name__ == "__main__":
    main()
