#!/usr/bin/env bash
# Fuzz llama model / tokenizer loading (crates/rlx-llama/fuzz, target llama_load) for a bounded time.
#
#   bash tools/fuzz_llama.sh [SECONDS]       # default 60
#
# See tools/fuzz_run.sh (nightly + cargo-fuzz; skipped without nightly). The seeded mutation
# test crates/rlx-llama/tests/mutation.rs (run by `cargo test -p rlx-llama`) covers the same
# ground in the normal suite. The corpus is seeded with the committed tiny model.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/fuzz_run.sh" crates/rlx-llama llama_load \
  'tests/fixtures/*.gguf' "${1:-60}" crates/rlx-llama/tests/mutation.rs
