#!/usr/bin/env python3
"""Reference fixtures for crates/rlx-geo (committed under crates/rlx-geo/tests/fixtures/).

    ~/.cache/rlx-ref/venv/bin/python tools/gen_geo_fixtures.py

(the venv of ../shared/ref/setup.sh: numpy + scipy). Seeds are fixed; a re-run writes the
same files.

- delaunay.json: random point sets (f64 uniform, f64 gaussian, integers) with
  scipy.spatial.Delaunay's simplices. Every set is checked here, in exact integer /
  rational arithmetic, to be in general position (each interior edge's opposite vertex strictly
  outside the circumcircle), so its Delaunay triangulation is unique and comparing triangle
  sets is meaningful.
- voronoi.json: nearest-site grids by numpy brute force (squared distance dx*dx + dy*dy in f64,
  np.argmin: ties to the lower index), for float sites, integer sites with ties, and sites
  outside the grid.
"""
import json
import os
from fractions import Fraction

import numpy as np
from scipy.spatial import Delaunay

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rlx-geo", "tests", "fixtures")


def incircle_sign(a, b, c, d):
    """Sign of the exact in-circle determinant (positive: d inside the CCW circle abc)."""
    a, b, c, d = [tuple(Fraction(v) for v in p) for p in (a, b, c, d)]
    rows = []
    for p in (a, b, c):
        dx, dy = p[0] - d[0], p[1] - d[1]
        rows.append((dx, dy, dx * dx + dy * dy))
    (a0, a1, a2), (b0, b1, b2), (c0, c1, c2) = rows
    det = a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0)
    return (det > 0) - (det < 0)


def orient(a, b, c):
    a, b, c = [tuple(Fraction(v) for v in p) for p in (a, b, c)]
    det = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    return (det > 0) - (det < 0)


def strictly_delaunay(pts, simplices):
    edges = {}
    for t in simplices:
        t = list(t)
        if orient(pts[t[0]], pts[t[1]], pts[t[2]]) < 0:
            t[1], t[2] = t[2], t[1]
        for k in range(3):
            e = tuple(sorted((t[k], t[(k + 1) % 3])))
            edges.setdefault(e, []).append((t, t[(k + 2) % 3]))
    for e, owners in edges.items():
        if len(owners) == 2:
            (t, _), (_, opp) = owners
            if incircle_sign(pts[t[0]], pts[t[1]], pts[t[2]], pts[opp]) >= 0:
                return False
    return True


def delaunay_cases():
    cases = []
    specs = [("uniform", 10, 1), ("uniform", 100, 2), ("uniform", 1000, 3), ("gauss", 300, 4),
             ("int", 200, 5), ("int_small_range", 60, 6), ("uniform", 3, 7), ("uniform", 4, 8)]
    for kind, n, seed in specs:
        rng = np.random.default_rng(seed)
        while True:
            if kind == "uniform":
                pts = rng.random((n, 2))
            elif kind == "gauss":
                pts = rng.normal(0.0, 1e3, (n, 2))
            elif kind == "int":
                pts = rng.integers(-10**6, 10**6, (n, 2)).astype(np.int64)
            else:
                pts = rng.integers(-40, 40, (n, 2)).astype(np.int64)
            if len({tuple(p) for p in pts.tolist()}) < n:
                continue
            tri = Delaunay(pts.astype(np.float64))
            plist = pts.tolist()
            if strictly_delaunay(plist, tri.simplices.tolist()):
                break
        tris = sorted(sorted(map(int, t)) for t in tri.simplices)
        cases.append({"name": f"{kind}_{n}_seed{seed}", "integer": kind.startswith("int"),
                      "points": plist, "triangles": tris})
    return cases


def voronoi_cases():
    cases = []

    def brute(sites, w, h):
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
        s = np.asarray(sites, dtype=np.float64)
        dx = s[:, 0][:, None, None] - xs[None]
        dy = s[:, 1][:, None, None] - ys[None]
        d = dx * dx + dy * dy
        return np.argmin(d, axis=0).astype(np.int64).reshape(-1).tolist()

    rng = np.random.default_rng(11)
    specs = [
        ("float_sites", rng.random((25, 2)) * [37, 23], 37, 23),
        ("integer_ties", np.array([[2, 2], [6, 2], [4, 6], [4, -2], [10, 10], [0, 10], [2, 2]], float), 13, 11),
        ("outside_grid", np.array([[-5.5, 3.0], [40.0, 1.0], [12.25, 30.0], [8.0, 8.0]]), 31, 17),
        ("many_sites", rng.random((300, 2)) * [64, 48], 64, 48),
        ("one_site", np.array([[3.3, 1.7]]), 5, 4),
    ]
    for name, sites, w, h in specs:
        sites = [[float(x), float(y)] for x, y in sites]
        cases.append({"name": name, "width": w, "height": h, "sites": sites, "labels": brute(sites, w, h)})
    return cases


def main():
    os.makedirs(OUT, exist_ok=True)
    for fname, obj in [("delaunay.json", delaunay_cases()), ("voronoi.json", voronoi_cases())]:
        path = os.path.join(OUT, fname)
        with open(path, "w") as f:
            json.dump(obj, f, separators=(",", ":"))
        print("wrote", os.path.relpath(path), os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
