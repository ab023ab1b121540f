#!/usr/bin/env bash
# ONNX conformance of rlx-onnx: every ONNX backend node test case through RLX.
#
#   bash tools/onnx_conformance.sh [CASES_DIR] [OUT_MD]
#     CASES_DIR  where the cases are written (default: /tmp/rlx-onnx-node-cases)
#     OUT_MD     the table (default: ONNX_CONFORMANCE.md at the repository root)
#
# Env: a Python with the `onnx` package: PYTHON= if given, else the reference
# venv of shared/ref/setup.sh (~/.cache/rlx-ref/venv) if present, else a venv
# this script makes under target/onnx-venv (pinned onnx + numpy from PyPI), so
# one command works on a fresh clone. Steps:
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
if [ -z "${PYTHON:-}" ]; then
  PYTHON="$HOME/.cache/rlx-ref/venv/bin/python"
  if ! "$PYTHON" -c "import onnx" 2>/dev/null; then
    VENV="$ROOT/target/onnx-venv"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q numpy==2.4.6 onnx==1.23.2
    PYTHON="$VENV/bin/python"
  fi
fi

"$PYTHON" "$ROOT/tools/gen_onnx_node_cases.py" "$CASES"
cd "$ROOT"
if [ "${PROFILE:-release}" = "release" ]; then
  cargo run --release -p rlx-onnx --example conformance -- "$CASES" "$OUT"
else
  cargo run -p rlx-onnx --example conformance -- "$CASES" "$OUT"
fi
