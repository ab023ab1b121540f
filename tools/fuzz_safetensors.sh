#!/usr/bin/env bash
# Fuzz the safetensors loader (crates/rlx-runtime/fuzz, target safetensors_loader) for a
# bounded time.
#
#   bash tools/fuzz_safetensors.sh [SECONDS]        # default 60
#
# See tools/fuzz_run.sh (nightly + cargo-fuzz; skipped without nightly). The seeded mutation
# test five_thousand_mutations_never_panic in crates/rlx-runtime/tests/weights.rs (run by
# `cargo test -p rlx-runtime`) covers the same ground in the normal suite. The corpus is
# seeded with the committed safetensors fixtures.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/fuzz_run.sh" crates/rlx-runtime safetensors_loader \
  'tests/fixtures/safetensors/*.safetensors' "${1:-60}" \
  crates/rlx-runtime/tests/weights.rs::five_thousand_mutations_never_panic
