#!/usr/bin/env bash
# ONNX conformance of rlx-onnx: every ONNX backend node test case through RLX.
#
#   bash tools/onnx_conformance.sh [CASES_DIR] [OUT_MD]
#     CASES_DIR  where the cases are written (default: /tmp/rlx-onnx-node-cases)
#     OUT_MD     the table (default: ONNX_CONFORMANCE.md at the repository root)
#
# Env: the reference venv of shared/ref/setup.sh (~/.cache/rlx-ref/venv, with
# the `onnx` package); override with PYTHON=. Steps:
#  (a) tools/gen_onnx_node_cases.py copies onnx/backend/test/data/node, or (PyPI
#      wheels ship only the generators) writes each case from
#      onnx.backend.test.case.node, as onnx's own generate-data does;
#  (b) the Rust harness (crates/rlx-onnx/examples/conformance.rs) runs every
#      case on the CPU device, reads the TensorProto .pb files with the crate's
#      prost types, compares at each case's rtol / atol (onnx's defaults 1e-3 /
#      1e-7) and writes pass / fail / unsupported per op to OUT_MD.
# Set PROFILE=dev for a faster build (the default is --release).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CASES="${1:-/tmp/rlx-onnx-node-cases}"
OUT="${2:-$ROOT/ONNX_CONFORMANCE.md}"
PYTHON="${PYTHON:-$HOME/.cache/rlx-ref/venv/bin/python}"

"$PYTHON" "$ROOT/tools/gen_onnx_node_cases.py" "$CASES"
cd "$ROOT"
if [ "${PROFILE:-release}" = "release" ]; then
  cargo run --release -p rlx-onnx --example conformance -- "$CASES" "$OUT"
else
  cargo run -p rlx-onnx --example conformance -- "$CASES" "$OUT"
fi
