#!/usr/bin/env python3
"""Calibration thresholds from ONNX Runtime's own quantization classes.

Env: ~/.cache/rlx-ref/venv (onnxruntime 1.32.0, numpy 2.4, scipy; made by
/work/shared/ref/setup.sh). Re-run from the repository root (fixed seed,
reproducible):

    ~/.cache/rlx-ref/venv/bin/python tools/gen_calibration_fixtures.py

Writes into crates/rlx-compile/tests/fixtures/:
  calibration_data.bin   every batch of every tensor, float32 little-endian,
                         concatenated (offsets and dims in calibration.json).
  calibration.json       per tensor: its batches (offset, dims), an optional
                         channel axis, and per calibration method the
                         (lo, hi) thresholds -- one pair per channel when the
                         tensor has an axis -- plus the Q/DQ scale and zero
                         point ORT derives from each pair.

Methods:
  minmax            min of the batch minima, max of the batch maxima (what
                    onnxruntime's MinMaxCalibrater does without moving
                    average; numpy here, it is two reductions).
  percentile / entropy   onnxruntime.quantization.calibrate.HistogramCollector
                    itself: collect() per batch (its histogram growth and
                    merging), then compute_collection_result(). Per-channel
                    activation stats (ORT has none for histograms) run one
                    collector per channel on that channel's values.
Q/DQ params: onnxruntime.quantization.quant_utils.compute_scale_zp on the
float32 thresholds, int8 symmetric (qmin -127, qmax 127) and int8
asymmetric (qmin -128, qmax 127) -- the two modes of rlx's insert_fake_quant.
"""

import contextlib
import io
import json
import os

import numpy as np
from onnxruntime.quantization.calibrate import HistogramCollector
from onnxruntime.quantization.quant_utils import compute_scale_zp

OUT = os.path.join("crates", "rlx-compile", "tests", "fixtures")
rng = np.random.RandomState(20261203)

# (name, batches, channel axis)
TENSORS = []


def add(name, batches, axis=None):
    TENSORS.append((name, [np.asarray(b, dtype=np.float32) for b in batches], axis))


def normal_with_outliers(n, scale):
    x = rng.normal(0.0, scale, n)
    idx = rng.choice(n, 4, replace=False)
    x[idx] = rng.uniform(6.0, 12.0, 4) * rng.choice([-1, 1], 4) * scale
    return x


# The range grows across batches (the histograms widen), shrinks, or is one-sided.
add("normal_outliers", [normal_with_outliers(1000, s) for s in (1.0, 1.6, 0.8)])
add("relu", [np.maximum(rng.normal(0.5, 1.0, 800) * s, 0.0) for s in (1.0, 0.7, 2.5)])
add("laplace_shrinking", [rng.laplace(0.0, s, 900) for s in (1.0, 0.5, 0.25)])
add(
    "per_channel",
    [rng.normal(0.0, 1.0, (2, 4, 60)) * np.array([0.1, 1.0, 3.0, 0.02]).reshape(1, 4, 1) + 0.3 for _ in range(3)],
    axis=1,
)

METHODS = {
    "percentile_99_99": dict(method="percentile", symmetric=False, num_bins=2048, num_quantized_bins=128, percentile=99.99),
    "percentile_sym_99_9": dict(method="percentile", symmetric=True, num_bins=2048, num_quantized_bins=128, percentile=99.9),
    "entropy": dict(method="entropy", symmetric=False, num_bins=2048, num_quantized_bins=128, percentile=99.999),
    "entropy_ort_default": dict(method="entropy", symmetric=False, num_bins=128, num_quantized_bins=128, percentile=99.999),
}


def histogram_range(batches, kw):
    c = HistogramCollector(scenario="same", **kw)
    with contextlib.redirect_stdout(io.StringIO()):  # it prints progress
        for b in batches:
            c.collect({"t": b})
        lo, hi = c.compute_collection_result()["t"][:2]
    return float(np.float32(lo)), float(np.float32(hi))


def channels(batches, axis):
    if axis is None:
        return [batches]
    n = batches[0].shape[axis]
    return [[np.take(b, c, axis=axis) for b in batches] for c in range(n)]


def qdq(lo, hi):
    rmin, rmax = np.array(lo, dtype=np.float32), np.array(hi, dtype=np.float32)
    out = {}
    for mode, qmin, qmax, sym in (("symmetric", -127, 127, True), ("asymmetric", -128, 127, False)):
        z, s = compute_scale_zp(rmin, rmax, np.array(qmin, dtype=np.int8), np.array(qmax, dtype=np.int8), symmetric=sym)
        out[mode] = {"scale": float(np.float32(s)), "zero_point": int(z)}
    return out


def main():
    blob = bytearray()
    cases = []
    for name, batches, axis in TENSORS:
        entry = {"name": name, "axis": axis, "batches": [], "methods": {}}
        for b in batches:
            entry["batches"].append({"offset": len(blob), "dims": list(b.shape)})
            blob += b.astype("<f4").tobytes()
        per_method = {}
        per_method["minmax"] = [
            (float(min(np.min(x) for x in ch)), float(max(np.max(x) for x in ch))) for ch in channels(batches, axis)
        ]
        for m, kw in METHODS.items():
            per_method[m] = [histogram_range(ch, kw) for ch in channels(batches, axis)]
        for m, ranges in per_method.items():
            entry["methods"][m] = [{"lo": lo, "hi": hi, "qdq": qdq(lo, hi)} for lo, hi in ranges]
        cases.append(entry)
    with open(os.path.join(OUT, "calibration_data.bin"), "wb") as f:
        f.write(blob)
    meta = {"methods": METHODS, "tensors": cases}
    with open(os.path.join(OUT, "calibration.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"wrote {len(blob)} bytes of data and {len(cases)} tensors")


if __name__ == "__main__":
    main()
