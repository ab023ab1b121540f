#!/usr/bin/env python3
"""SmolLM2 tokens/s side by side: llama.cpp (llama-cpp-python) and RLX's `generate` example.

Run (from the repository root, after a release build of the example):
    cargo build --release -p rlx-llama --example generate
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ~/.cache/rlx-ref/venv/bin/python \
        tools/bench_llamacpp.py [--threads 1 2] [--repeat 2] [--tokens 64] [--model PATH ...] \
        [--rlx target/release/examples/generate] [--rlx-args="--prefill-chunk 64 --kv-f32"]
  env: ~/.cache/rlx-ref/venv with llama-cpp-python 0.3.36 (CPU build).
  --model defaults to $RLX_MODELS/gguf/SmolLM2-135M-Instruct.Q4_1.gguf; several paths run one
  after the other (e.g. the Q8_0 / Q4_K_M files tools/quantize_smollm2.py makes), one table each.
  --rlx-args: extra arguments for RLX's `generate` (split on spaces; write `--rlx-args=...`
  when they start with `--`).

Both run the same prompt (the sentence of BENCHMARKS.md repeated 8 times, 136 tokens) from an
empty cache (f16 keys / values on both sides: llama.cpp's default and `generate`'s), greedy,
with EOS ignored, the same thread count (llama.cpp n_threads /
n_threads_batch, RLX RLX_NUM_THREADS), alternating llama.cpp and RLX `--repeat` times per thread
count so that machine load hits both alike. Prefill: the prompt in one call (llama.cpp: one
batch of all its tokens; RLX: chunks of 128 and the remainder in pieces of 32 / 8: 128 + 8). Decode: one
token per call, argmax of the last logits, `--tokens - 1` steps. Prints a markdown table and
the load average.

Bandwidth: each decode step reads every weight tensor once (the tied LM head reads the whole
embedding), so weights GB/s = (sum of the GGUF tensors' bytes) x decode tokens/s; the table
gives it as a share of the copy bandwidth measured at the start (numpy copies of a 512 MiB
array, read + write bytes per second, best of 5, one thread).
"""
import argparse
import os
import re
import subprocess
import time

import numpy as np
import llama_cpp
from llama_cpp import Llama

PROMPT = " ".join(["The quick brown fox jumps over the lazy dog while the cat watches from the window."] * 8)


def default_model():
    root = os.environ.get("RLX_MODELS", os.path.expanduser("~/.cache/rlx-models"))
    return os.path.join(root, "gguf", "SmolLM2-135M-Instruct.Q4_1.gguf")


def llamacpp_run(model, threads, n):
    llm = Llama(model_path=model, n_ctx=512, n_batch=512, n_threads=threads,
                n_threads_batch=threads, verbose=False)
    ids = llm.tokenize(PROMPT.encode(), add_bos=False)
    vocab = llm.n_vocab()
    t0 = time.perf_counter()
    llm.eval(ids)
    prefill = time.perf_counter() - t0
    last = lambda: np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(vocab,))
    tok = int(np.argmax(last()))
    t0 = time.perf_counter()
    for _ in range(n - 1):
        llm.eval([tok])
        tok = int(np.argmax(last()))
    decode = time.perf_counter() - t0
    return len(ids) / prefill, (n - 1) / decode


def rlx_run(binary, model, threads, n, extra):
    env = dict(os.environ, RLX_NUM_THREADS=str(threads))
    cmd = [binary, "--model", model, "--no-chat", "--prompt", PROMPT, "-n", str(n), "--ignore-eos"] + extra
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stderr
    rate = lambda phase: float(re.search(rf"{phase}: .* = ([0-9.]+) tokens/s", out).group(1))
    return rate("prefill"), rate("decode")


def weight_bytes(model):
    """Bytes of all tensors of the GGUF file (what one decode step reads)."""
    from gguf import GGUFReader
    return sum(int(t.n_bytes) for t in GGUFReader(model).tensors)


def copy_bandwidth():
    """Read + write bytes per second of a 512 MiB numpy copy, best of 5."""
    src = np.ones(1 << 27, dtype=np.float32)
    dst = np.empty_like(src)
    best = 0.0
    for _ in range(5):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        best = max(best, 2 * src.nbytes / (time.perf_counter() - t0))
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", nargs="+", default=[default_model()])
    ap.add_argument("--rlx", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"),
                                                  "release", "examples", "generate"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rlx-args", default="")
    a = ap.parse_args()
    bw = copy_bandwidth()
    for model in a.model:
        bench_model(a, model, bw)


def bench_model(a, model, bw):
    wbytes = weight_bytes(model)
    print(f"\nmodel {os.path.basename(model)}: {wbytes / 1e6:.1f} MB of weights per decode step; "
          f"copy bandwidth {bw / 1e9:.1f} GB/s; RLX args {a.rlx_args!r}")
    print("| threads | engine | prefill tokens/s | decode tokens/s | weights GB/s (% of copy) | load average |")
    print("|---|---|---|---|---|---|")
    extra = a.rlx_args.split()
    for t in a.threads:
        for _ in range(a.repeat):
            for name, run in (("llama.cpp", lambda: llamacpp_run(model, t, a.tokens)),
                              ("RLX", lambda: rlx_run(a.rlx, model, t, a.tokens, extra))):
                p, d = run()
                load = os.getloadavg()[0]
                gbs = wbytes * d
                print(f"| {t} | {name} | {p:.1f} | {d:.1f} | {gbs / 1e9:.2f} ({100 * gbs / bw:.0f}%) "
                      f"| {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
