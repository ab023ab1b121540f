#!/usr/bin/env bash
# Shared body of the tools/fuzz_*.sh scripts: runs one cargo-fuzz target for a bounded time.
#
#   bash tools/fuzz_run.sh CRATE_DIR TARGET SEED_GLOB SECONDS MUTATION_TEST
#
# CRATE_DIR (relative to the repository root) holds fuzz/ with TARGET; the corpus is seeded
# with the files SEED_GLOB (relative to CRATE_DIR) names. Installs cargo-fuzz (cargo install,
# from crates.io) if it is missing. cargo-fuzz needs a nightly toolchain; without one the script
# says so and exits 0 without fuzzing (set FUZZ_REQUIRE=1 to make that an error) --
# MUTATION_TEST, the seeded mutation test of the normal suite, covers the same ground.
# libFuzzer runs with a 2 GiB RSS / malloc limit so an allocation bomb counts as a crash.
# Crashes are left in CRATE_DIR/fuzz/artifacts/TARGET/.
set -euo pipefail

CRATE_REL="$1"
TARGET="$2"
SEEDS="$3"
SECS="$4"
MUTATION_TEST="$5"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRATE="$ROOT/$CRATE_REL"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz $TARGET: no nightly toolchain (cargo-fuzz needs one: rustup toolchain install nightly);"
  echo "fuzz $TARGET: SKIPPED. $MUTATION_TEST is the bounded fuzz run of the normal suite."
  [ "${FUZZ_REQUIRE:-0}" = "1" ] && exit 1
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz $TARGET: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

CORPUS="$CRATE/fuzz/corpus/$TARGET"
mkdir -p "$CORPUS"
# shellcheck disable=SC2086 # SEEDS is a glob
cp "$CRATE"/$SEEDS "$CORPUS"/

cd "$CRATE"
echo "fuzz $TARGET: running for ${SECS}s"
cargo +nightly fuzz run "$TARGET" "$CORPUS" -- \
  -max_total_time="$SECS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=262144 -timeout=10
echo "fuzz $TARGET: no crash in ${SECS}s"
