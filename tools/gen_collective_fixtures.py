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
- `det.<kind>`: ReduceMode::Deterministic as documented in the crate (rank
  order, f64 Neumaier compensation, one rounding to the dtype by numpy),
  compared bit for bit;
- all_gather, all_to_all, broadcast (root n-1) and ppermute results.
"""
import json
import math
import os

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


def neumaier(xs):
    s, c = 0.0, 0.0
    for x in xs:
        x = float(x)
        t = s + x
        c += (s - t) + x if abs(s) >= abs(x) else (x - t) + s
        s = t
    return s + c


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
        det["sum"] = as_list(np.array([neumaier(c) for c in cols], dtype=np.float64).astype(t))
        det["mean"] = as_list(np.array([neumaier(c) / n for c in cols], dtype=np.float64).astype(t))
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


def main():
    rng = np.random.default_rng(25)
    cases = [case(rng, d, n, l) for n in range(1, 5) for d in DTYPES for l in LENGTHS]
    path = os.path.join(os.path.dirname(__file__), "..", "crates", "rlx-collectives", "tests", "fixtures", "collectives.json")
    with open(path, "w") as f:
        json.dump({"numpy": np.__version__, "cases": cases}, f, separators=(",", ":"))
    print(f"wrote {len(cases)} cases to {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
