#!/usr/bin/env python3
"""ONNX Runtime's per-node profile of a CNN model, summed per node shape, to set next to
`RLX_CPU_PROFILE=1 cnn_import MODEL 1 N` (issue 28's per-layer-class tables in BENCHMARKS.md).

Re-run: ~/.cache/rlx-ref/venv/bin/python tools/ort_profile_cnn.py \
    ~/.cache/rlx-models/cnn/mobilenetv2_b1.onnx --threads 1 --runs 20
Prints one line per (op type, input shape, weight shape): calls per run, ms per run, share.
"""
import argparse
import collections
import json
import os
import tempfile

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for _ in range(3):
        s.run(None, feeds)
    for _ in range(a.runs):
        s.run(None, feeds)
    path = s.end_profiling()
    ev = json.load(open(path))
    runs = [e for e in ev if e.get("name") == "model_run"]
    # the last `runs` model_run events are the timed ones
    t0 = runs[-a.runs]["ts"]
    acc = collections.defaultdict(lambda: [0, 0.0])
    total = 0.0
    for e in ev:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time") or e["ts"] < t0:
            continue
        args = e["args"]
        shapes = [list(d.values())[0] for d in args.get("input_type_shape", [])]
        key = (args.get("op_name"), str(shapes[:2]), str([list(d.values())[0] for d in args.get("output_type_shape", [])]))
        acc[key][0] += 1
        acc[key][1] += e["dur"] / 1000.0
        total += e["dur"] / 1000.0
    wall = sum(r["dur"] for r in runs[-a.runs:]) / 1000.0 / a.runs
    print(f"ORT {a.threads} thread(s): {total / a.runs:.3f} ms of kernels per run, model_run {wall:.3f} ms")
    for (op, ins, outs), (n, ms) in sorted(acc.items(), key=lambda kv: -kv[1][1]):
        print(f"{ms / a.runs:8.3f} ms/run {100 * ms / total:5.1f}% {n // a.runs:3d} calls/run  {op} {ins} -> {outs}")


if __name__ == "__main__":
    main()
