#!/usr/bin/env python3
"""Reference fixtures for crates/rlx-umap (committed under crates/rlx-umap/tests/fixtures/).

    ~/.cache/rlx-ref/venv/bin/pip install umap-learn scikit-learn
    ~/.cache/rlx-ref/venv/bin/python tools/gen_umap_fixtures.py

(the venv of ../shared/ref/setup.sh plus umap-learn 0.5.x and scikit-learn). Seeds are fixed.
Digits: crates/rlx/examples/data/digits/digits.csv.gz (64 raw pixel values 0..16, label).

- knn.json: numpy brute-force kNN (squared euclidean, np.argsort kind="stable": ties to the
  lower index) of small integer point sets full of exact ties, self and query form.
- fuzzy.json: umap-learn's fuzzy_simplicial_set on digits (n_neighbors 15) given the same
  exact kNN: sigmas, rhos, nnz and sum of the graph, and the graph entries of rows 0..59.
- ab.json: umap-learn's find_ab_params for several (spread, min_dist).
- trust.json: sklearn.manifold.trustworthiness (k = 5) of fixed embeddings: digits projected
  by a fixed 64 x 2 matrix, and a random continuous data set with its embedding.
- umap_digits.json: umap-learn UMAP(n_neighbors=15, min_dist=0.1, n_components=2) on digits:
  trustworthiness (k = 5) of fit_transform for seeds 0..4, and of transform on a held-out
  split (the train / test split indices are stored: every 5th point is held out), with the
  fraction of each held-out point's 15 nearest training points in the embedding that are
  among its 15 input-space nearest training points; and the trustworthiness of PCA to 2D (the
  best linear map, a floor parametric UMAP's encoder must clear).
"""
import gzip
import json
import os

import numpy as np
import umap
from sklearn.decomposition import PCA
from sklearn.manifold import trustworthiness
from umap.umap_ import find_ab_params, fuzzy_simplicial_set

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "crates", "rlx-umap", "tests", "fixtures")


def load_digits():
    with gzip.open(os.path.join(ROOT, "crates", "rlx", "examples", "data", "digits", "digits.csv.gz"), "rt") as f:
        rows = np.array([[float(v) for v in line.split(",")] for line in f if line.strip()])
    return rows[:, :64], rows[:, 64].astype(int)


def brute_knn(q, x, k):
    d2 = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    idx = np.argsort(d2, axis=1, kind="stable")[:, :k]
    return idx, np.sqrt(np.take_along_axis(d2, idx, 1))


def embedding_overlap(train_x, test_x, train_e, test_e, k=15):
    """Mean fraction of a test point's k nearest training points in the embedding that are
    among its k nearest training points in input space."""
    in_idx, _ = brute_knn(test_x, train_x, k)
    em_idx, _ = brute_knn(test_e.astype(np.float64), train_e.astype(np.float64), k)
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(in_idx, em_idx)]))


def write(name, obj):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump(obj, f)
    print("wrote", name)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(22)
    x, _ = load_digits()

    cases = []
    for n, d, k, hi in [(40, 3, 6, 3), (25, 2, 8, 2), (30, 4, 30, 2)]:
        pts = rng.integers(0, hi, size=(n, d)).astype(np.float64)
        idx, dist = brute_knn(pts, pts, k)
        q = rng.integers(0, hi, size=(7, d)).astype(np.float64)
        qi, qd = brute_knn(q, pts, k)
        cases.append({"points": pts.tolist(), "k": k, "indices": idx.tolist(), "distances": dist.tolist(),
                      "queries": q.tolist(), "query_indices": qi.tolist(), "query_distances": qd.tolist()})
    write("knn.json", cases)

    knn_i, knn_d = brute_knn(x, x, 15)
    graph, sigmas, rhos = fuzzy_simplicial_set(x, 15, np.random.RandomState(0), "euclidean",
                                               knn_indices=knn_i, knn_dists=knn_d.astype(np.float32))
    g = graph.tocoo()
    rows = [(int(r), int(c), float(v)) for r, c, v in zip(g.row, g.col, g.data) if r < 60]
    write("fuzzy.json", {"n_neighbors": 15, "sigmas": sigmas.tolist(), "rhos": rhos.tolist(),
                         "nnz": int(graph.nnz), "sum": float(graph.sum()), "entries": sorted(rows)})

    write("ab.json", [{"spread": s, "min_dist": m, "a": float(a), "b": float(b)}
                      for s, m in [(1.0, 0.1), (1.0, 0.0), (1.0, 0.5), (2.0, 0.3), (0.5, 0.05)]
                      for a, b in [find_ab_params(s, m)]])

    proj = rng.normal(size=(64, 2))
    small = rng.normal(size=(120, 6))
    small_e = small[:, :2] + 0.5 * rng.normal(size=(120, 2))
    write("trust.json", {"projection": proj.tolist(),
                         "digits_trust": float(trustworthiness(x, x @ proj, n_neighbors=5)),
                         "small_x": small.tolist(), "small_embedding": small_e.tolist(),
                         "small_trust": float(trustworthiness(small, small_e, n_neighbors=5)),
                         "small_trust_k10": float(trustworthiness(small, small_e, n_neighbors=10))})

    fits = []
    for seed in range(5):
        e = umap.UMAP(n_neighbors=15, min_dist=0.1, n_components=2, random_state=seed).fit_transform(x)
        fits.append(float(trustworthiness(x, e, n_neighbors=5)))
    test = np.arange(len(x)) % 5 == 0
    model = umap.UMAP(n_neighbors=15, min_dist=0.1, n_components=2, random_state=0).fit(x[~test])
    test_e = model.transform(x[test])
    write("umap_digits.json", {
        "params": {"n_neighbors": 15, "min_dist": 0.1, "n_components": 2},
        "fit_trust": fits, "umap_learn_version": umap.__version__,
        "held_out_every": 5,
        "transform_trust": float(trustworthiness(x[test], test_e, n_neighbors=5)),
        "transform_overlap": embedding_overlap(x[~test], x[test], model.embedding_, test_e),
        "pca_trust": float(trustworthiness(x, PCA(n_components=2).fit_transform(x), n_neighbors=5)),
    })


if __name__ == "__main__":
    main()
