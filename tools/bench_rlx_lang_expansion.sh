#!/usr/bin/env bash
# What `rlx!` expansion of a 6-layer encoder adds to a build.
#
# Re-run from the repository root (deps already built once):
#     tools/bench_rlx_lang_expansion.sh
# It rebuilds the test crate crates/rlx-lang/tests/encoder6.rs (a 6-layer
# MiniLM-style encoder in `rlx!`) and the same file with the `rlx!`
# invocation replaced by an empty `Graph` (same deps, same link), each
# RUNS times after a touch, and prints the median wall time of both and
# the difference: the macro's expansion plus compiling its output.
set -euo pipefail
RUNS=${RUNS:-5}
src=crates/rlx-lang/tests/encoder6.rs
base=crates/rlx-lang/tests/encoder6_baseline_tmp.rs
trap 'rm -f "$base"' EXIT
python3 - "$src" "$base" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
i = s.index("rlx_lang::rlx! {")
depth, j = 0, s.index("{", i)
for k in range(j, len(s)):
    depth += {"{": 1, "}": -1}.get(s[k], 0)
    if depth == 0:
        break
s = s[:i] + 'rlx_ir::Graph::new("encoder6")' + s[k + 1:]
open(sys.argv[2], "w").write(s)
PY
cargo test -q -p rlx-lang --test encoder6 --test encoder6_baseline_tmp --no-run 2>/dev/null
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
time_build() {
  for _ in $(seq "$RUNS"); do
    touch "$1"
    local t0 t1
    t0=$(date +%s.%N)
    cargo test -q -p rlx-lang --test "$2" --no-run 2>/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
  done | median
}
with=$(time_build "$src" encoder6)
without=$(time_build "$base" encoder6_baseline_tmp)
echo "rebuild with rlx! (6-layer encoder): ${with}s"
echo "rebuild without (empty Graph):      ${without}s"
echo "added by rlx!:                      $(echo "$with - $without" | bc)s"
