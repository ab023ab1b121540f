#!/usr/bin/env bash
# Fuzz the GGUF reader (crates/rlx-gguf/fuzz, target gguf_reader) for a bounded time.
#
#   bash tools/fuzz_gguf.sh [SECONDS]        # default 60
#
# See tools/fuzz_run.sh (nightly + cargo-fuzz; skipped without nightly). The seeded mutation
# test crates/rlx-gguf/tests/mutation.rs (20,000 mutants, run by `cargo test -p rlx-gguf`)
# covers the same ground in the normal suite. The corpus is seeded with the committed fixtures.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/fuzz_run.sh" crates/rlx-gguf gguf_reader \
  'tests/fixtures/*.gguf' "${1:-60}" crates/rlx-gguf/tests/mutation.rs
