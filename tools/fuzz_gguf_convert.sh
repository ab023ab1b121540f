#!/usr/bin/env bash
# Fuzz safetensors -> GGUF conversion (crates/rlx-gguf-convert/fuzz, target convert_safetensors)
# for a bounded time.
#
#   bash tools/fuzz_gguf_convert.sh [SECONDS]        # default 60
#
# See tools/fuzz_run.sh (nightly + cargo-fuzz; skipped without nightly). The seeded mutation
# test crates/rlx-gguf-convert/tests/mutation.rs (3,000 mutants of the safetensors and ONNX
# fixtures, run by `cargo test -p rlx-gguf-convert`) covers the same ground in the normal suite.
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/fuzz_run.sh" crates/rlx-gguf-convert convert_safetensors \
  'tests/fixtures/*.safetensors' "${1:-60}" crates/rlx-gguf-convert/tests/mutation.rs
