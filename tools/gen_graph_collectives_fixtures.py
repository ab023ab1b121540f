#!/usr/bin/env python3
"""Reference values for the in-graph collectives (crates/rlx-collectives/tests/graph_ops.rs).

For 1..4 ranks, each rank's input x_r ([2, 12] f64) and batched input xb_r
([3, 2, 12]) and what numpy says every collective returns on every rank.

Re-run (from the repo root):
    ~/.cache/rlx-ref/venv/bin/python tools/gen_graph_collectives_fixtures.py
"""
import json
import pathlib

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "crates/rlx-collectives/tests/fixtures/graph_ops.json"


def case(world, rng):
    xs = [rng.standard_normal((2, 12)) for _ in range(world)]
    xb = [rng.standard_normal((3, 2, 12)) for _ in range(world)]
    total = np.sum(xs, axis=0)
    c = 12 // world
    root = world - 1
    per_rank = []
    for r in range(world):
        per_rank.append({
            "all_reduce_sum": total,
            "all_reduce_mean": total / world,
            "all_reduce_max": np.max(xs, axis=0),
            "all_reduce_min": np.min(xs, axis=0),
            "all_gather_axis0": np.concatenate(xs, axis=0),
            "all_gather_axis1": np.concatenate(xs, axis=1),
            "reduce_scatter_sum_axis1": total[:, r * c:(r + 1) * c],
            "reduce_scatter_mean_axis1": total[:, r * c:(r + 1) * c] / world,
            # split axis 1 into `world` chunks, chunk r of every rank, concatenated on axis 0
            "all_to_all_split1_concat0": np.concatenate(
                [np.split(xs[s], world, axis=1)[r] for s in range(world)], axis=0),
            "broadcast_root_last": xs[root],
            "reduce_sum_root0": total if r == 0 else np.zeros_like(total),
            # perm (s, s+1 mod world): rank r receives from r-1
            "ppermute_shift": xs[(r - 1) % world],
            "recv_from_prev": xs[(r - 1) % world],
            # vmap over the leading axis of xb
            "vmap_all_gather_axis1": np.concatenate(xb, axis=2),
            "vmap_reduce_scatter_axis1": np.sum(xb, axis=0)[:, :, r * c:(r + 1) * c],
            "vmap_all_reduce_sum": np.sum(xb, axis=0),
        })
    enc = lambda a: {"dims": list(a.shape), "data": [float(v) for v in np.asarray(a).ravel()]}
    return {
        "world": world,
        "x": [enc(x) for x in xs],
        "xb": [enc(x) for x in xb],
        "expected": [{k: enc(v) for k, v in d.items()} for d in per_rank],
    }


def main():
    rng = np.random.default_rng(20261205)
    cases = [case(w, rng) for w in (1, 2, 3, 4)]
    OUT.write_text(json.dumps({"numpy": np.__version__, "cases": cases}))
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
