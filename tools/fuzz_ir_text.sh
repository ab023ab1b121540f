#!/usr/bin/env bash
# Fuzz the textual-IR parser (crates/rlx-ir/fuzz, target ir_text) for a bounded time.
#
#   bash tools/fuzz_ir_text.sh [SECONDS]        # default 60
#
# See tools/fuzz_run.sh (nightly + cargo-fuzz; skipped without nightly). The seeded mutation
# and truncation tests in crates/rlx-ir/tests/text.rs (run by `cargo test -p rlx-ir`) cover
# the same ground in the normal suite. The corpus is seeded with the golden MIR texts.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/fuzz_run.sh" crates/rlx-ir ir_text \
  'tests/golden/*.mir' "${1:-60}" crates/rlx-ir/tests/text.rs
