#!/usr/bin/env bash
# Fuzz the .rlxp package reader (crates/rlx-pkg/fuzz, target rlxp_reader) for a bounded time.
#
#   bash tools/fuzz_rlxp.sh [SECONDS]        # default 60
#
# See tools/fuzz_run.sh (nightly + cargo-fuzz; skipped without nightly). The seeded mutation
# test five_thousand_mutations_never_panic in crates/rlx-pkg/tests/hostile.rs (run by
# `cargo test -p rlx-pkg`) covers the same ground in the normal suite. The corpus is seeded with
# the committed packages of tools/gen_rlxp_hostile.py (the reference package and the hostile
# corpus); the target recomputes the checksums of about half of its inputs.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/fuzz_run.sh" crates/rlx-pkg rlxp_reader \
  'tests/fixtures/rlxp/*.rlxp' "${1:-60}" \
  crates/rlx-pkg/tests/hostile.rs::five_thousand_mutations_never_panic
