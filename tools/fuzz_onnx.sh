#!/usr/bin/env bash
# Fuzz the ONNX loader + importer (crates/rlx-onnx/fuzz, target onnx_loader) for a bounded time.
#
#   bash tools/fuzz_onnx.sh [SECONDS]        # default 60
#
# Installs cargo-fuzz (cargo install, from crates.io) if it is missing. cargo-fuzz needs a
# nightly toolchain; without one the script says so and exits 0 without fuzzing (set
# FUZZ_REQUIRE=1 to make that an error) -- the seeded mutation test
# crates/rlx-onnx/tests/hostile.rs (mutated_models_never_panic, run by `cargo test -p rlx-onnx`) covers
# the same ground in the normal suite. The corpus is seeded with the committed fixtures;
# libFuzzer runs with a 2 GiB RSS / malloc limit so an allocation bomb counts as a crash.
# Crashes are left in crates/rlx-onnx/fuzz/artifacts/onnx_loader/.
set -euo pipefail

SECS="${1:-60}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRATE="$ROOT/crates/rlx-onnx"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz_onnx: no nightly toolchain (cargo-fuzz needs one: rustup toolchain install nightly);"
  echo "fuzz_onnx: SKIPPED. crates/rlx-onnx/tests/hostile.rs (mutated_models_never_panic) is the bounded fuzz run of the normal suite."
  [ "${FUZZ_REQUIRE:-0}" = "1" ] && exit 1
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz_onnx: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

CORPUS="$CRATE/fuzz/corpus/onnx_loader"
mkdir -p "$CORPUS"
for d in "$CRATE"/tests/fixtures/node/*/; do cp "$d/model.onnx" "$CORPUS/$(basename "$d").onnx"; done

cd "$CRATE"
echo "fuzz_onnx: running onnx_loader for ${SECS}s"
cargo +nightly fuzz run onnx_loader "$CORPUS" -- \
  -max_total_time="$SECS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=262144 -timeout=10
echo "fuzz_onnx: no crash in ${SECS}s"
