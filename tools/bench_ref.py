#!/usr/bin/env python3
"""Reference timing of one rlx-bench pattern, for `rlx-bench`'s compare example.

Run (the compare example spawns this itself):
    ~/.cache/rlx-ref/venv/bin/python tools/bench_ref.py <pattern> [--threads N] [--min-time S] [--serve]
Env: ~/.cache/rlx-ref/venv (numpy, jax, threadpoolctl), made by shared/ref/setup.sh.

The pattern names are rlx-bench's (crates/rlx-bench/src/patterns.rs), and each
builds the same computation with the same shapes:
  matmul_N, gemv_KxN, elementwise10_L          numpy (OpenBLAS), eager calls
  matmul_bf16_N (bf16 operands), matmul_gelu_MxKxN, ffn_SxHxI, attention_HxSxD,
  bert_layer_SxHxNH, mlp_step_BxIxHxO          JAX jit on CPU (XLA)
  minilm_l6_bB_sS                               ONNX Runtime (CPU EP, intra-op threads N)
                                                on the fp32 all-MiniLM-L6-v2 export
                                                (--onnx; made by shared/ref/export_minilm_onnx.py)
  cnn_<model>_b<B>                              ONNX Runtime (CPU EP, intra-op threads N) on
                                                $RLX_MODELS/cnn/<model>_b<B>.onnx (tools/gen_cnn_bench_models.py),
                                                input x[i] = ((i * 7919) % 1000) / 500 - 1
The process is pinned to the first N CPUs (sched_setaffinity) and the BLAS /
XLA thread pools are sized to N before numpy / jax are imported. Timing matches
rlx-bench: 3 warm-up calls, then runs until >= 20 runs and >= --min-time
seconds; prints one JSON line with min / median / p99 seconds.
With --serve it builds the pattern and warms it up (3 runs, then >= 20 runs and
>= --min-time seconds untimed), prints {"ready": true, ...},
then answers each stdin line "RUNS SECONDS" with one such JSON line for a batch
of >= RUNS runs and >= SECONDS seconds, until stdin closes (the compare example's
--interleave: RLX and reference batches alternate within one process pair).
With --session-time (ONNX Runtime patterns) it times session creation instead
(5 sessions, the same JSON line). With --dump DIR (cnn patterns) it writes each
output of one run as raw little-endian f32 to DIR/<i>.bin and prints its dims.
Exit code 3: no reference for this pattern.
"""
import argparse
import json
import math
import os
import re
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("pattern")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--min-time", type=float, default=1.0)
ap.add_argument("--serve", action="store_true")
ap.add_argument("--session-time", action="store_true")
ap.add_argument("--dump")
ap.add_argument("--onnx", default=os.path.expanduser(
    "~/.cache/rlx-ref/models/onnx/all-MiniLM-L6-v2-fp32.onnx"))
a = ap.parse_args()

cpus = sorted(os.sched_getaffinity(0))[: max(1, a.threads)]
os.sched_setaffinity(0, set(cpus))
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = str(a.threads)
os.environ.pop("OPENBLAS_CORETYPE", None)
os.environ.pop("OPENBLAS_L2_SIZE", None)
if a.threads == 1:
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

import numpy as np  # noqa: E402


def values(shape, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, size=shape) * scale).astype(np.float32)


def timeit(fn, sync=lambda r: r, warmup=3, min_runs=20, min_time=None):
    for _ in range(warmup):
        sync(fn())
    ts = []
    end = time.perf_counter() + (a.min_time if min_time is None else min_time)
    while len(ts) < min_runs or time.perf_counter() < end:
        t0 = time.perf_counter()
        sync(fn())
        ts.append(time.perf_counter() - t0)
    ts.sort()
    n = len(ts)
    return {"runs": n, "min_s": ts[0], "median_s": ts[n // 2],
            "p99_s": ts[min(n, max(1, math.ceil(0.99 * n))) - 1]}


def numpy_pattern(name):
    if m := re.fullmatch(r"matmul_(\d+)", name):
        n = int(m[1])
        x, w, c = values((n, n), 1), values((n, n), 2), np.empty((n, n), np.float32)
        return lambda: np.matmul(x, w, out=c)
    if m := re.fullmatch(r"gemv_(\d+)x(\d+)", name):
        k, n = int(m[1]), int(m[2])
        x, w, c = values((1, k), 1), values((k, n), 2), np.empty((1, n), np.float32)
        return lambda: np.matmul(x, w, out=c)
    if m := re.fullmatch(r"elementwise10_(\d+)", name):
        x = values((int(m[1]),), 1)

        def chain():
            h = x * np.float32(1.5)
            h = h + np.float32(0.5)
            h = np.tanh(h)
            h = h * x
            h = h - x
            h = np.abs(h)
            h = np.sqrt(h)
            h = h + np.float32(1.0)
            h = np.log(h)
            return np.maximum(h, np.float32(0.0))
        return chain
    return None


def jax_pattern(name):
    import jax
    import jax.numpy as jnp

    def linear(p, x):
        return x @ p[0] + p[1]

    def lin_params(i, o, seed):
        return (jnp.asarray(values((i, o), seed, 1 / math.sqrt(i))), jnp.zeros((o,), jnp.float32))

    def ffn(p1, p2, x):
        return linear(p2, jax.nn.gelu(linear(p1, x), approximate=False))

    def attention(q, k, v):
        s = jnp.einsum("hqd,hkd->hqk", q, k) / math.sqrt(q.shape[-1])
        return jnp.einsum("hqk,hkd->hqd", jax.nn.softmax(s, axis=-1), v)

    def layer_norm(x, g, b, eps=1e-12):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + eps) * g + b

    if m := re.fullmatch(r"matmul_bf16_(\d+)", name):
        n = int(m.group(1))
        x = jnp.asarray(values((n, n), 1), jnp.bfloat16)
        w = jnp.asarray(values((n, n), 2), jnp.bfloat16)
        f = jax.jit(lambda x, w: x @ w)
        return lambda: f(x, w)
    if m := re.fullmatch(r"matmul_gelu_(\d+)x(\d+)x(\d+)", name):
        mm, k, n = map(int, m.groups())
        x, w = jnp.asarray(values((mm, k), 1)), jnp.asarray(values((k, n), 2, 1 / math.sqrt(k)))
        f = jax.jit(lambda x, w: jax.nn.gelu(x @ w, approximate=False))
        return lambda: f(x, w)
    if m := re.fullmatch(r"ffn_(\d+)x(\d+)x(\d+)", name):
        s, h, i = map(int, m.groups())
        x, p1, p2 = jnp.asarray(values((s, h), 1)), lin_params(h, i, 2), lin_params(i, h, 3)
        f = jax.jit(ffn)
        return lambda: f(p1, p2, x)
    if m := re.fullmatch(r"attention_(\d+)x(\d+)x(\d+)", name):
        h, s, d = map(int, m.groups())
        q, k, v = (jnp.asarray(values((h, s, d), i)) for i in (1, 2, 3))
        f = jax.jit(attention)
        return lambda: f(q, k, v)
    if m := re.fullmatch(r"bert_layer_(\d+)x(\d+)x(\d+)", name):
        s, hd, nh = map(int, m.groups())
        dh = hd // nh
        x = jnp.asarray(values((s, hd), 1))
        ps = {n: lin_params(hd, hd, 2 + i) for i, n in enumerate("qkvo")}
        ln = [(jnp.ones((hd,), jnp.float32), jnp.zeros((hd,), jnp.float32)) for _ in range(2)]
        p1, p2 = lin_params(hd, 4 * hd, 7), lin_params(4 * hd, hd, 8)

        def layer(ps, ln, p1, p2, x):
            heads = {n: linear(ps[n], x).reshape(s, nh, dh).transpose(1, 0, 2) for n in "qkv"}
            att = attention(heads["q"], heads["k"], heads["v"]).transpose(1, 0, 2).reshape(s, hd)
            h = layer_norm(linear(ps["o"], att) + x, *ln[0])
            return layer_norm(ffn(p1, p2, h) + h, *ln[1])
        f = jax.jit(layer)
        return lambda: f(ps, ln, p1, p2, x)
    if m := re.fullmatch(r"mlp_step_(\d+)x(\d+)x(\d+)x(\d+)", name):
        b, di, dh, do = map(int, m.groups())
        x = jnp.asarray(values((b, di), 1))
        y = jnp.asarray(np.eye(do, dtype=np.float32)[[(r * 7 + 3) % do for r in range(b)]])
        params = [lin_params(di, dh, 2), lin_params(dh, do, 3)]

        def loss(params, x, y):
            h = jax.nn.relu(linear(params[0], x))
            z = linear(params[1], h)
            return -jnp.sum(y * jax.nn.log_softmax(z, axis=-1)) / b

        def step(params, x, y):
            l, g = jax.value_and_grad(loss)(params, x, y)
            return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, g), l
        st = jax.jit(step, donate_argnums=0)
        state = [jax.tree_util.tree_map(jnp.copy, params)]

        def run():
            state[0], l = st(state[0], x, y)
            return state[0]
        return run
    return None


def ort_session(path):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def cnn_pattern(name):
    """ONNX Runtime on one model of tools/gen_cnn_bench_models.py."""
    import onnxruntime as ort
    m = re.fullmatch(r"cnn_(\w+)_b(\d+)", name)
    root = os.environ.get("RLX_MODELS", os.path.expanduser("~/.cache/rlx-models"))
    path = os.path.join(root, "cnn", f"{m[1]}_b{m[2]}.onnx")
    if a.session_time:
        return f"onnxruntime {ort.__version__}", lambda: ort_session(path)
    sess = ort_session(path)
    shape = sess.get_inputs()[0].shape
    n = int(np.prod(shape))
    x = ((((np.arange(n, dtype=np.int64) * 7919) % 1000) / 500 - 1).astype(np.float32)).reshape(shape)
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
        outs = sess.run(None, {"input": x})
        for i, o in enumerate(outs):
            np.ascontiguousarray(o, np.float32).tofile(os.path.join(a.dump, f"{i}.bin"))
        print(json.dumps({"outputs": [list(o.shape) for o in outs]}))
        sys.exit(0)
    # Input and outputs bound once and reused run to run, as RLX's side
    # is timed (`OnnxModel::run_into`): neither side allocates or copies
    # its outputs per run.
    bound = [ort.OrtValue.ortvalue_from_numpy(o) for o in sess.run(None, {"input": x})]
    io = sess.io_binding()
    io.bind_cpu_input("input", x)
    for meta, value in zip(sess.get_outputs(), bound):
        io.bind_ortvalue_output(meta.name, value)

    def run():
        sess.run_with_iobinding(io)
        return bound, x
    return f"onnxruntime {ort.__version__}", run


def ort_pattern(name):
    if name.startswith("cnn_"):
        return cnn_pattern(name)
    m = re.fullmatch(r"minilm_l6_b(\d+)_s(\d+)", name)
    if not m:
        return None
    import onnxruntime as ort
    b, s = int(m[1]), int(m[2])
    if a.session_time:
        return f"onnxruntime {ort.__version__}", lambda: ort_session(a.onnx)
    sess = ort_session(a.onnx)
    # Same ids as rlx-bench's MiniLM rows: (i * 7919) % 29000 + 1000, no padding.
    ids = ((np.arange(b * s, dtype=np.int64) * 7919) % 29000 + 1000).reshape(b, s)
    feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
    return f"onnxruntime {ort.__version__}", lambda: sess.run(None, feed)


def serve(report, fn, sync):
    """Answers "RUNS SECONDS" lines on stdin with one timed batch each."""
    # Warm up as long as a whole one-shot measurement (ONNX Runtime's first
    # ~100 runs at 2 threads were 30% slower than its later ones).
    timeit(fn, sync, warmup=3, min_runs=20)
    report({"ready": True})
    for line in sys.stdin:
        runs, secs = line.split()
        report(timeit(fn, sync, warmup=0, min_runs=int(runs), min_time=float(secs)))


def main():
    sync = lambda r: r  # noqa: E731
    limits = None
    fn = numpy_pattern(a.pattern)
    ort_ref = ort_pattern(a.pattern) if fn is None else None
    if ort_ref is not None:
        library, fn = ort_ref
    elif fn is not None:
        from threadpoolctl import threadpool_info, threadpool_limits
        blas = [d.get("internal_api") for d in threadpool_info()]
        library = f"numpy {np.__version__} ({','.join(b for b in blas if b)})"
        limits = threadpool_limits(limits=a.threads)
    else:
        fn = jax_pattern(a.pattern)
        if fn is None:
            print(f"no reference for {a.pattern}", file=sys.stderr)
            sys.exit(3)
        import jax
        library = f"jax {jax.__version__} jit"
        sync = jax.block_until_ready

    def report(res):
        line = {"pattern": a.pattern, "library": library, "threads": a.threads, **res}
        print(json.dumps(line), flush=True)

    if a.serve:
        serve(report, fn, sync)
    elif a.session_time:
        report(timeit(fn, sync, warmup=1, min_runs=5, min_time=0.0))
    else:
        report(timeit(fn, sync))
    if limits is not None:
        limits.restore_original_limits()


if __name__ == "__main__":
    main()
