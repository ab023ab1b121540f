#!/usr/bin/env bash
# Fuzz saved optimizer states (crates/rlx-optim/fuzz, target optim_state) for a bounded time.
#
#   bash tools/fuzz_optim.sh [SECONDS]        # default 60
#
# Installs cargo-fuzz (cargo install, from crates.io) if it is missing. cargo-fuzz needs a
# nightly toolchain; without one the script says so and exits 0 without fuzzing (set
# FUZZ_REQUIRE=1 to make that an error) -- the seeded mutation test
# crates/rlx-optim/tests/mutation.rs (3,000 mutants, run by `cargo test -p rlx-optim`) covers
# the same ground in the normal suite. The corpus is seeded with a saved state written by the
# test suite's optimizers. Crashes are left in crates/rlx-optim/fuzz/artifacts/optim_state/.
set -euo pipefail

SECS="${1:-60}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRATE="$ROOT/crates/rlx-optim"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz_optim: no nightly toolchain (cargo-fuzz needs one: rustup toolchain install nightly);"
  echo "fuzz_optim: SKIPPED. crates/rlx-optim/tests/mutation.rs is the bounded fuzz run of the normal suite."
  [ "${FUZZ_REQUIRE:-0}" = "1" ] && exit 1
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz_optim: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

CORPUS="$CRATE/fuzz/corpus/optim_state"
mkdir -p "$CORPUS"
(cd "$ROOT" && RLX_OPTIM_SEED_OUT="$CORPUS/seed.json" cargo test -q -p rlx-optim --test mutation >/dev/null)

cd "$CRATE"
echo "fuzz_optim: running optim_state for ${SECS}s"
cargo +nightly fuzz run optim_state "$CORPUS" -- \
  -max_total_time="$SECS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 -timeout=10
echo "fuzz_optim: no crash in ${SECS}s"
