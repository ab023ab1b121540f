#!/usr/bin/env bash
# Fuzz the PEFT adapter loader (crates/rlx-peft/fuzz, target adapter_loader) for a bounded time.
#
#   bash tools/fuzz_peft.sh [SECONDS]        # default 60
#
# Installs cargo-fuzz (cargo install, from crates.io) if it is missing. cargo-fuzz needs a
# nightly toolchain; without one the script says so and exits 0 without fuzzing (set
# FUZZ_REQUIRE=1 to make that an error) -- the seeded mutation test in
# crates/rlx-peft/tests/hostile.rs (run by `cargo test -p rlx-peft`) covers the same ground in
# the normal suite. The corpus is seeded with the committed fixtures (an even leading byte
# selects "safetensors under a fixture config", an odd one "config for the LoRA weights"); libFuzzer runs with
# a 2 GiB RSS / malloc limit so an allocation bomb counts as a crash. Crashes are left in
# crates/rlx-peft/fuzz/artifacts/adapter_loader/.
set -euo pipefail

SECS="${1:-60}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CRATE="$ROOT/crates/rlx-peft"

if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  echo "fuzz_peft: no nightly toolchain (cargo-fuzz needs one: rustup toolchain install nightly);"
  echo "fuzz_peft: SKIPPED. crates/rlx-peft/tests/hostile.rs is the bounded fuzz run of the normal suite."
  [ "${FUZZ_REQUIRE:-0}" = "1" ] && exit 1
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz_peft: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

CORPUS="$CRATE/fuzz/corpus/adapter_loader"
mkdir -p "$CORPUS"
# the first byte picks the config: 0 LoRA, 2 DoRA, 4 AdaLoRA, 6 IA3, 8 OFT
pick=0
for d in lora dora adalora ia3 oft; do
  { printf "\\x$(printf %02x $pick)"; cat "$CRATE/tests/fixtures/$d/adapter_model.safetensors"; } > "$CORPUS/weights_$d"
  pick=$((pick + 2))
done
{ printf '\x01'; cat "$CRATE/tests/fixtures/lora/adapter_config.json"; } > "$CORPUS/config_lora"

cd "$CRATE"
echo "fuzz_peft: running adapter_loader for ${SECS}s"
cargo +nightly fuzz run adapter_loader "$CORPUS" -- \
  -max_total_time="$SECS" -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 -timeout=10
echo "fuzz_peft: no crash in ${SECS}s"
