#!/usr/bin/env bash
# One-call CUDA check for a machine with an NVIDIA GPU (H100 / H200 class,
# 16 cores: under 8 minutes). Builds rlx-cuda in release, runs its test
# suite with RLX_REQUIRE_CUDA=1 (a skip is a failure): the kernels
# (tests/gpu_kernels.rs), the launch plans (tests/plan.rs, plan_ops.rs) and
# the graph executor against the CPU backend (tests/executor.rs: every op
# family in f32 / f16 (unary / binary ops from the IR's ALL lists; scans,
# pads, convolutions, pooling; gather_elements, scatter_add, top-k, resizes,
# transposed conv, GGUF Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 dequantize
# (bit-exact vs rlx-gguf), Q4_K / Q5_K / Q6_K dequantize and quantized
# matmul, a bad gather_elements index, matmuls with fused epilogues: the
# cuBLASLt bias / ReLU / tanh-GELU path and the GEMM + kernels path), an
# MLP, an attention block, digits training steps with the update copied
# on the device (run_updating) and AdamW steps from gradient outputs on
# the device (run_training_step) against rlx-optim), the on-device SGD /
# Adam / AdamW updates against rlx-optim (tests/optim_updates.rs), the
# update plans and cuBLASLt descriptors (tests/updates.rs, gemm_lt.rs) and
# the op coverage lists (tests/op_coverage.rs); runs the
# runtime's device tests with the `cuda` feature (cuda:0 then runs graphs
# through rlx_cuda::CudaBackend), and prints benchmark rows:
# GEMM 4096^3 f32 / TF32 / f16 / bf16 (rlx-cuda's cuBLAS path) next to
# PyTorch's torch.matmul on the same GPU when torch is importable, and
# MiniLM b1 / b32 s128 on ONNX Runtime's CUDA provider when it is installed,
# SmolLM2 (GGUF Q4_K_M / Q8_0 / Q4_1, whichever files are present) prefill +
# decode on cuda:0 against the CPU (tests/smollm2.rs) and its decode tok/s
# on cuda:0 next to the CPU backend (examples/smollm2_decode_bench.rs).
# Nothing is downloaded besides crates (cargo) ; models come from
# tools/fetch_models.sh (RLX_MODELS, default ~/.cache/rlx-models).
#
# Usage: tools/gpu_check.sh            (from the repository root)
# Env:   PYTHON (default python3), RLX_MODELS, GEMM_N (default 4096)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
N=${GEMM_N:-4096}
MODELS=${RLX_MODELS:-$HOME/.cache/rlx-models}
status=0
step() { printf '\n== %s\n' "$*"; }

step "device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
  || echo "nvidia-smi not found"

step "build (release, cuda)"
cargo build --release -p rlx-cuda --tests --examples || exit 1
cargo build --release -p rlx-runtime --features cuda --tests || exit 1

step "rlx-cuda tests (RLX_REQUIRE_CUDA=1)"
RLX_REQUIRE_CUDA=1 cargo test --release -p rlx-cuda || status=1

step "graph executor on cuda:0 vs the CPU backend (tests/executor.rs, printed)"
RLX_REQUIRE_CUDA=1 cargo test --release -p rlx-cuda --test executor -- --nocapture --test-threads 1 \
  2>&1 | grep -E '^test |digits loss|panicked|test result' || status=1

step "kernels added by issue 27 on cuda:0 (indexing, resampling, dequantize, optimizer updates; printed)"
RLX_REQUIRE_CUDA=1 cargo test --release -p rlx-cuda --test executor --test optim_updates -- --nocapture \
  --test-threads 1 indexing gather_elements device_ 2>&1 | grep -E '^test |panicked|test result' || status=1

step "on-device training updates, fused matmul epilogues (cuBLASLt), K-quants and Q4_0..Q8_0 on cuda:0 (printed)"
RLX_REQUIRE_CUDA=1 cargo test --release -p rlx-cuda --test executor -- --nocapture --test-threads 1 \
  adam_steps device_updates fused_matmul k_quant legacy_quant digits 2>&1 \
  | grep -E '^test |loss|panicked|test result' || status=1

# (devices_fallback assumes no usable accelerator, so it stays in CI only;
# devices_accelerators treats a usable cuda:0 as a device that runs graphs.)
step "runtime device tests (--features cuda)"
cargo test --release -p rlx-runtime --features cuda --test devices_accelerators || status=1

step "GEMM ${N}^3 (rlx-cuda, cuBLAS)"
cargo run --release -q -p rlx-cuda --example cuda_gemm_bench -- "$N" 20 || status=1

step "GEMM ${N}^3 (PyTorch torch.matmul, same GPU)"
"$PY" - "$N" <<'PYEOF' || echo "PyTorch not importable: no reference row"
import sys, torch
n = int(sys.argv[1])
assert torch.cuda.is_available()
for name, dt, tf32 in [("f32", torch.float32, False), ("tf32", torch.float32, True),
                       ("f16", torch.float16, False), ("bf16", torch.bfloat16, False)]:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.rand(n, n, device="cuda", dtype=dt) - 0.5
    b = torch.rand(n, n, device="cuda", dtype=dt) - 0.5
    a @ b; torch.cuda.synchronize()
    ms = []
    for _ in range(20):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); a @ b; e.record(); e.synchronize(); ms.append(s.elapsed_time(e))
    ms.sort(); med = ms[len(ms) // 2]
    print(f"torch gemm {name:<4} {n}^3: {med:.3f} ms, {2 * n**3 / (med * 1e-3) / 1e12:.1f} TFLOP/s")
PYEOF

step "MiniLM s128 (ONNX Runtime CUDA EP reference)"
"$PY" - "$MODELS" <<'PYEOF' || echo "onnxruntime-gpu not usable: no reference row"
import sys, os, time, glob
import numpy as np, onnxruntime as ort
if "CUDAExecutionProvider" not in ort.get_available_providers():
    raise SystemExit("onnxruntime has no CUDAExecutionProvider")
path = (glob.glob(os.path.join(sys.argv[1], "**", "*MiniLM*", "**", "*.onnx"), recursive=True)
        + glob.glob(os.path.join(sys.argv[1], "**", "model.onnx"), recursive=True))
if not path:
    raise SystemExit("no MiniLM .onnx under " + sys.argv[1] + " (run tools/fetch_models.sh)")
s = ort.InferenceSession(path[0], providers=["CUDAExecutionProvider"])
names = [i.name for i in s.get_inputs()]
for b in (1, 32):
    feed = {n: np.ones((b, 128), np.int64) if n != "token_type_ids" else np.zeros((b, 128), np.int64) for n in names}
    for _ in range(5): s.run(None, feed)
    ts = []
    for _ in range(50):
        t = time.perf_counter(); s.run(None, feed); ts.append(time.perf_counter() - t)
    ts.sort()
    print(f"ort-cuda MiniLM b{b} s128: {ts[len(ts) // 2] * 1e3:.3f} ms")
PYEOF
step "MiniLM b2 s16 through the CUDA executor vs the CPU (tests/minilm.rs)"
RLX_REQUIRE_CUDA=1 RLX_MODELS="$MODELS" cargo test --release -p rlx-cuda --test minilm \
  -- --include-ignored --nocapture || status=1

step "MiniLM s128 on rlx (rlx bench: cuda:0 next to the CPU; a row says why a device could not run it)"
ONNX=$(find "$MODELS" -name 'all-MiniLM-L6-v2-fp32.onnx' 2>/dev/null | head -1)
if [ -n "$ONNX" ]; then
  for b in 1 32; do
    timeout 120 cargo run --release -q -p rlx-cli --features rlx/cuda -- bench "$ONNX" \
      --devices cuda:0,cpu --bind batch=$b --bind sequence=128 --runs 20 || status=1
  done
else
  echo "no all-MiniLM-L6-v2-fp32.onnx under $MODELS (run tools/fetch_models.sh)"
fi

step "SmolLM2 prefill (6 tokens) + one decode step on cuda:0 vs the CPU, every block (tests/smollm2.rs)"
RLX_REQUIRE_CUDA=1 RLX_MODELS="$MODELS" cargo test --release -p rlx-cuda \
  --test smollm2 -- --include-ignored --nocapture on_cuda 2>&1 \
  | grep -E '^test |worst|skipped|panicked|test result' || status=1

step "SmolLM2 decode tok/s (rlx: cuda:0 next to the CPU, 64-slot cache)"
found=0
for q in Q4_K_M Q8_0 Q4_1; do
  f=""
  for d in "$MODELS/gguf" "$HOME/.cache/rlx-ref/models/gguf"; do
    [ -e "$d/SmolLM2-135M-Instruct.$q.gguf" ] && { f="$d/SmolLM2-135M-Instruct.$q.gguf"; break; }
  done
  [ -n "$f" ] || continue
  found=1
  timeout 180 cargo run --release -q -p rlx-cuda --example smollm2_decode_bench -- "$f" 20 || status=1
done
[ "$found" -eq 1 ] || echo "no SmolLM2 GGUF under $MODELS/gguf (run tools/fetch_models.sh)"

step "result"
if [ "$status" -eq 0 ]; then echo "gpu_check: PASS"; else echo "gpu_check: FAIL"; fi
exit "$status"
