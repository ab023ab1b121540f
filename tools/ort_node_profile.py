#!/usr/bin/env python3
"""ONNX Runtime's per-node time for one model, per op type (ms per run).

The reference side of an RLX per-op profile (`RLX_CPU_PROFILE=1 cnn_import
MODEL 1 RUNS`): ORT's own node profiler (`SessionOptions.enable_profiling`)
over RUNS runs after 3 warm-up runs, summed per op type, per node
(`--nodes`) or per (op type, first two input shapes, output shape)
(`--shapes`: the per-layer-class tables of BENCHMARKS.md).

Re-run (the env of tools/README.md):
  chrt -f 10 ~/.cache/rlx-ref/venv/bin/python tools/ort_node_profile.py \
      ~/.cache/rlx-models/cnn/unet_b1.onnx --threads 1 --runs 20 [--nodes] [--shapes]
"""
import argparse
import collections
import json
import os
import tempfile

import numpy as np
import onnxruntime as ort


def feeds_for(sess):
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--nodes", action="store_true", help="also list each node")
    ap.add_argument("--shapes", action="store_true",
                    help="also sum per op type and input / output shapes")
    a = ap.parse_args()

    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    warm = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    feeds = feeds_for(warm)
    for _ in range(3):
        warm.run(None, feeds)
    del warm

    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    # One warm-up run of the profiled session (its allocations), then the
    # counted ones: events before the second `model_run` are dropped.
    for _ in range(a.runs + 1):
        sess.run(None, feeds)
    path = sess.end_profiling()
    events = json.load(open(path))
    runs = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    events = [e for e in events if e.get("ts", 0) >= runs[1]]

    by_type = collections.defaultdict(lambda: [0.0, 0])
    by_node = collections.defaultdict(lambda: [0.0, 0, ""])
    by_shape = collections.defaultdict(lambda: [0.0, 0])
    model_run = 0.0
    for e in events:
        if e.get("cat") == "Session" and e.get("name") == "model_run":
            model_run += e["dur"]
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        op = e["args"].get("op_name", "?")
        by_type[op][0] += e["dur"]
        by_type[op][1] += 1
        n = by_node[e["name"][: -len("_kernel_time")]]
        n[0] += e["dur"]
        n[1] += 1
        n[2] = op
        shape = lambda key: [list(d.values())[0] for d in e["args"].get(key, [])]
        k = (op, str(shape("input_type_shape")[:2]), str(shape("output_type_shape")))
        by_shape[k][0] += e["dur"]
        by_shape[k][1] += 1
    total = sum(v[0] for v in by_type.values())
    r = a.runs
    print(f"ORT {a.model} threads={a.threads} runs={r}: kernels {total / r / 1e3:.3f} ms/run, "
          f"model_run {model_run / r / 1e3:.3f} ms/run")
    for op, (us, calls) in sorted(by_type.items(), key=lambda kv: -kv[1][0]):
        print(f"  {op:24s} {us / r / 1e3:8.3f} ms/run {calls // r:4d} calls/run "
              f"{us / calls / 1e3:8.4f} ms/call")
    if a.nodes:
        for name, (us, calls, op) in sorted(by_node.items(), key=lambda kv: -kv[1][0]):
            print(f"    {op:18s} {us / r / 1e3:8.3f} ms/run  {name}")
    if a.shapes:
        for (op, ins, outs), (us, calls) in sorted(by_shape.items(), key=lambda kv: -kv[1][0]):
            print(f"    {us / r / 1e3:8.3f} ms/run {100 * us / total:5.1f}% {calls // r:3d} calls/run"
                  f"  {op} {ins} -> {outs}")


if __name__ == "__main__":
    main()
