#!/usr/bin/env bash
# A/B regression check of the first-round benchmark rows, RLX side only:
# two release builds of `compare` (the code before and after a change)
# alternated on the same machine, 1 thread, best RLX min per side.
#
#   git worktree add --detach /tmp/before <REV>
#   (cd /tmp/before && cargo build --release -p rlx-bench --example compare)
#   cargo build --release -p rlx-bench --example compare
#   BEFORE=/tmp/before/target/release/examples/compare \
#   AFTER=target/release/examples/compare tools/ab_regression.sh [REPS]
#
# Prints one line per run ("before|after REP ROW MIN UNIT") and a table of
# the best min per side and after / before. Needs RLX_MODELS for the MiniLM
# rows (tools/fetch_models.sh).
set -euo pipefail
: "${BEFORE:?path of the before build of compare}" "${AFTER:?path of the after build}"
reps=${1:-3}
export RLX_MODELS=${RLX_MODELS:-$HOME/.cache/rlx-models}
rows="elementwise10_64 mlp_step_64x784x256x10 matmul_512 matmul_1024 gemv_4096x4096
  attention ffn bert_layer minilm_l6_b1_s16 minilm_l6_b1_s128"
out=$(mktemp)
for row in $rows; do
  for rep in $(seq "$reps"); do
    for side in before after; do
      bin=BEFORE; [[ $side == after ]] && bin=AFTER
      "${!bin}" --no-ref --threads 1 --quick --only "$row" 2>/dev/null \
        | grep "^| $row" \
        | awk -F'|' -v s="$side" -v r="$rep" '{gsub(/ /,"",$2); gsub(/^ +| +$/,"",$5); print s, r, $2, $5}' \
        | tee -a "$out"
    done
  done
done
awk '{ v = $4 * ($5 == "µs" ? 1e-3 : ($5 == "s" ? 1e3 : 1));
       k = $3; if (!(k SUBSEP $1 in best) || v < best[k, $1]) best[k, $1] = v; rows[k] = 1 }
     END { print "| row | before (ms) | after (ms) | after / before |"; print "|---|---|---|---|";
           for (k in rows) printf "| %s | %.4g | %.4g | %.3f |\n", k, best[k, "before"], best[k, "after"], best[k, "after"] / best[k, "before"] }' "$out"
rm -f "$out"
