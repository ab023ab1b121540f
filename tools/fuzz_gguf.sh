#!/usr/bin/env bash
# Fuzz the GGUF reader (crates/rlx-gguf/fuzz, target gguf_reader) for a bounded time.
#
#   bash tools/fuzz_gguf.sh [SECONDS]        # default 60
#
# Installs cargo-fuzz (cargo install, from crates.io) if it is missing. cargo-fuzz needs a
# nightly toolchain; without one the script says so and exits 0 without fuzzing (set
# FUZZ_REQUIRE=1 to make that an error) -- the seeded mutation test
# crates/rlx-gguf/tests/mutation.rs (20,000 mutants, run by `cargo test -p rlx-gguf`) covers
# the same ground in the normal suite. The corpus is seeded with the committed fixtures;
# libFuzzer runs with a 2 GiB RSS / malloc limit so an allocation bomb counts as a crash.
# Crashes are left in crates/rlx-gguf/fuzz/artifacts/gguf_reader/.
set -euo pipefail

SECS="${1:-60}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRATE="$ROOT/crates/rlx-gguf"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz_gguf: no nightly toolchain (cargo-fuzz needs one: rustup toolchain install nightly);"
  echo "fuzz_gguf: SKIPPED. crates/rlx-gguf/tests/mutation.rs is the bounded fuzz run of the normal suite."
  [ "${FUZZ_REQUIRE:-0}" = "1" ] && exit 1
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz_gguf: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

CORPUS="$CRATE/fuzz/corpus/gguf_reader"
mkdir -p "$CORPUS"
cp "$CRATE"/tests/fixtures/*.gguf "$CORPUS"/

cd "$CRATE"
echo "fuzz_gguf: running gguf_reader for ${SECS}s"
cargo +nightly fuzz run gguf_reader "$CORPUS" -- \
  -max_total_time="$SECS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=262144 -timeout=10
echo "fuzz_gguf: no crash in ${SECS}s"
