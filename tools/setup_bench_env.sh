#!/usr/bin/env bash
# Creates the Python env the bench references run in (tools/bench_ref.py:
# numpy / OpenBLAS, JAX jit, ONNX Runtime), from the package registry, at
# $RLX_REF_VENV (default ~/.cache/rlx-ref/venv, where the `compare` example
# looks for it). Pinned to the versions BENCHMARKS.md was measured with.
# Re-running keeps an env that already imports them all.
#   tools/setup_bench_env.sh && tools/fetch_models.sh
#   cargo run --release -p rlx-bench --example compare -- --interleave
set -euo pipefail
VENV="${RLX_REF_VENV:-$HOME/.cache/rlx-ref/venv}"
PY="${PYTHON:-python3}"
PINS=(numpy==2.4.6 jax==0.10.2 jaxlib==0.10.2 onnxruntime==1.32.0 threadpoolctl==3.8.0)
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import numpy, jax, onnxruntime, threadpoolctl" 2>/dev/null; then
  echo "setup_bench_env: $VENV already has the references" >&2
else
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "${PINS[@]}"
fi
"$VENV/bin/python" -c "import numpy, jax, onnxruntime; print('numpy', numpy.__version__, 'jax', jax.__version__, 'onnxruntime', onnxruntime.__version__)"
echo "$VENV/bin/python"
