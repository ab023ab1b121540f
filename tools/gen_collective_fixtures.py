#!/usr/bin/env python3
"""Reference results for the rlx-collectives host collectives.

Re-run (from the repository root):
    ~/.cache/rlx-ref/venv/bin/python tools/gen_collective_fixtures.py

Writes crates/rlx-collectives/tests/fixtures/collectives.json: for world
sizes 1..4, dtypes f16 / f32 / f64 / i32 and buffer lengths 0, 1, 7, 12, 13,
24, the per-rank inputs and what every collective must return, computed with
numpy / math.fsum:

- `exact.<kind>`: the f64 reference of all_reduce (sum by math.fsum, i.e.
  correctly rounded; mean = that / n; max / min by numpy), for Ring within a
  tolerance;
- `det.<kind>`: ReduceMode::Deterministic: the exact sum (fractions.Fraction;
  mean: divided by n) rounded once to the dtype, nearest-even, compared bit
  for bit;
- all_gather, all_to_all, broadcast (root n-1) and ppermute results.
"""
import json
import math
import os
from fractions import Fraction

import numpy as np

LENGTHS = [0, 1, 7, 12, 13, 24]
DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int32}


def inputs(rng, dtype, n, length):
    out = []
    for _ in range(n):
        if dtype == "i32":
            a = rng.integers(-1000, 1000, size=length).astype(np.int32)
        elif dtype == "f16":
            a = (rng.standard_normal(length) * 4).astype(np.float16)
        else:
            a = (rng.standard_normal(length) * 10).astype(DTYPES[dtype])
            # a few values far apart in magnitude, where summation order matters
            if length >= 7:
                a[3] = DTYPES[dtype](1e7)
                a[5] = DTYPES[dtype](1e-3)
        out.append(a)
    return out


def round_exact(q, dtype):
    """The Fraction q rounded once, nearest-even, to dtype (numpy scalar)."""
    t = DTYPES[dtype]
    v = t(float(q))  # within one ulp of q; fix it up by exact comparisons
    cands = [v, np.nextafter(v, t(np.inf)), np.nextafter(v, t(-np.inf))]
    cands = [c for c in cands if np.isfinite(c)]
    def key(c):
        even = int(np.asarray(c).view({2: np.uint16, 4: np.uint32, 8: np.uint64}[t().itemsize])) & 1
        return (abs(Fraction(float(c)) - q), even)
    return min(cands, key=key)


def exact_det(col, n, dtype):
    """Deterministic sum / mean of one column: exact, rounded once."""
    vals = [float(v) for v in col]
    if any(math.isnan(v) for v in vals) or (math.inf in vals and -math.inf in vals):
        return math.nan, math.nan
    if math.inf in vals or -math.inf in vals:
        inf = math.inf if math.inf in vals else -math.inf
        return inf, inf
    s = sum((Fraction(v) for v in vals), Fraction(0))
    if s == 0:
        z = -0.0 if vals and all(math.copysign(1, v) < 0 for v in vals) else 0.0
        return z, z
    return float(round_exact(s, dtype)), float(round_exact(s / n, dtype))


def as_list(a):
    return [int(v) if isinstance(v, (np.integer,)) else float(v) for v in a]


def case(rng, dtype, n, length):
    xs = inputs(rng, dtype, n, length)
    stack = np.stack(xs) if length else np.zeros((n, 0), DTYPES[dtype])
    t = DTYPES[dtype]
    exact, det = {}, {}
    cols = [stack[:, i] for i in range(length)]
    if dtype == "i32":
        s = np.sum(stack.astype(np.int64), axis=0)
        exact["sum"] = [int(v) for v in s]
        det["sum"] = [int(v) for v in s.astype(np.int32)]
    else:
        exact["sum"] = [math.fsum(float(v) for v in c) for c in cols]
        exact["mean"] = [math.fsum(float(v) for v in c) / n for c in cols]
        det["sum"] = [exact_det(c, n, dtype)[0] for c in cols]
        det["mean"] = [exact_det(c, n, dtype)[1] for c in cols]
    for k, f in (("max", np.max), ("min", np.min)):
        v = as_list(f(stack, axis=0)) if length else []
        exact[k] = v
        det[k] = v
    gather = as_list(np.concatenate(xs))
    a2a = None
    if length % n == 0:
        c = length // n
        a2a = [as_list(np.concatenate([xs[i][r * c:(r + 1) * c] for i in range(n)])) for r in range(n)]
    shift = [[i, (i + 1) % n] for i in range(n)]
    partial = [[0, n - 1]]
    def permuted(perm):
        out = [np.zeros(length, t) for _ in range(n)]
        for s_, d in perm:
            out[d] = xs[s_]
        return [as_list(o) for o in out]
    return {
        "world": n,
        "dtype": dtype,
        "len": length,
        "inputs": [as_list(x) for x in xs],
        "exact": exact,
        "det": det,
        "all_gather": gather,
        "all_to_all": a2a,
        "broadcast_root": n - 1,
        "broadcast": as_list(xs[n - 1]),
        "ppermute": [
            {"perm": shift, "out": permuted(shift)},
            {"perm": partial, "out": permuted(partial)},
        ],
    }


def split_cases(rng):
    """Hard columns (cancellation, 1e-30..1e30, -0.0) for the split test:
    24 values per column, 8 columns, and their exact sum rounded once."""
    out = []
    for dtype in ("f32", "f64"):
        t = DTYPES[dtype]
        cols = []
        for k in range(8):
            mag = 10.0 ** rng.uniform(-30, 30, size=24)
            v = (mag * rng.choice([-1, 1], size=24)).astype(t)
            if k % 2 == 0:  # heavy cancellation: x, -x pairs plus small terms
                v[12:] = -v[:12]
                v[0] = t(1e30)
                v[12] = t(-1e30)
                v[5] = t(3e-30)
            if k == 3:
                v[:] = t(-0.0)
            if k == 5:
                v[::2] = t(-0.0)
                v[1::2] = t(0.0)
            if k == 7:  # a column summing to an exact tie candidate
                v[:] = t(0.1)
            cols.append(v)
        data = np.stack(cols, axis=1)  # 24 rows (values) x 8 columns
        sums = [exact_det(data[:, j], 1, dtype)[0] for j in range(8)]
        fsums = [math.fsum(float(x) for x in data[:, j]) for j in range(8)]
        out.append({"dtype": dtype, "rows": [as_list(r) for r in data], "sum": sums, "fsum": fsums})
    return out


def main():
    rng = np.random.default_rng(25)
    cases = [case(rng, d, n, l) for n in range(1, 5) for d in DTYPES for l in LENGTHS]
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-collectives", "tests", "fixtures", "collectives.json")
    with open(path, "w") as f:
        json.dump({"numpy": np.__version__, "cases": cases, "split": split_cases(rng)}, f, separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
