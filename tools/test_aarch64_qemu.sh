#!/usr/bin/env bash
# Runs the quantized-matmul tests (crates/rlx-cpu/tests/quant_matmul.rs) built
# for aarch64-unknown-linux-gnu under QEMU's user-mode emulator, twice: on a
# core with FEAT_DotProd (`-cpu max`: Scalar, Neon and NeonDot paths) and on
# a Cortex-A53 (Armv8.0, no `sdot`: Scalar and Neon). The tests hold every
# instruction set `QuantIsa::available` reports to ggml's numbers (numpy
# fixtures) and to the portable path's bits.
#
#   tools/test_aarch64_qemu.sh            (from the repository root)
#
# Needs: rustup target aarch64-unknown-linux-gnu (added here when missing),
# a cross linker (Debian crossbuild-essential-arm64) and qemu-aarch64
# (Debian qemu-user). A missing target skips the run, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=aarch64-unknown-linux-gnu
SYSROOT=/usr/aarch64-linux-gnu

if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  rustup target add "$TARGET" || true
fi
if ! rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  echo "SKIP: the $TARGET target cannot be installed; aarch64 tests skipped"
  exit 0
fi
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "$tool is required (crossbuild-essential-arm64, qemu-user)" >&2; exit 1; }
done

export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
echo "== build (quant_matmul tests, $TARGET)"
bin=$(cargo test --target "$TARGET" -p rlx-cpu --test quant_matmul --no-run --message-format json 2>/dev/null |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "quant_matmul":
        print(m["executable"])')
[[ -x "$bin" ]] || { echo "the quant_matmul test binary was not built" >&2; exit 1; }
for cpu in max cortex-a53; do
  echo "== qemu-aarch64 -cpu $cpu"
  # The instruction sets the run covers, then the results (pipefail keeps
  # a failing test's status).
  qemu-aarch64 -cpu "$cpu" -L "$SYSROOT" "$bin" --nocapture --test-threads=1 2>&1 |
    grep -E '^instruction sets|^test |^test result|panicked'
done
