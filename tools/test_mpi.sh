#!/usr/bin/env bash
# Runs the rlx-collectives suite over MPI on 1, 2, 3 and 4 ranks.
#
#   tools/test_mpi.sh           # build with --features mpi, run the suite
#   BENCH=1 tools/test_mpi.sh   # also time all_reduce of 1 / 16 / 64 MB (release build)
#
# Needs Open MPI and libclang (Debian: apt-get install -y libopenmpi-dev
# openmpi-bin libclang-dev). Every mpirun is wrapped in `timeout 120`.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
profile=()
[[ -n "${BENCH:-}" ]] && profile=(--release)
start=$(date +%s)
# Build with the errors shown (the json pass below only finds the binary).
cargo test -p rlx-collectives --features mpi --test mpi "${profile[@]}" --no-run
bin=$(cargo test -p rlx-collectives --features mpi --test mpi "${profile[@]}" --no-run --message-format=json 2>/dev/null \
  | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[[ -x "$bin" ]] || { echo "test_mpi: could not build the mpi test binary" >&2; exit 1; }
echo "test_mpi: built $bin in $(( $(date +%s) - start )) s"
for np in 1 2 3 4; do
  t0=$(date +%s)
  if [[ -n "${BENCH:-}" ]]; then export COLLECTIVES_MPI_BENCH=1; fi
  timeout 120 mpirun -np "$np" --oversubscribe "$bin"
  echo "test_mpi: $np ranks ok in $(( $(date +%s) - t0 )) s"
done
# The data-parallel digits example over MPI on 1, 2 and 4 ranks.
cargo build -p rlx --features mpi --example dp_digits "${profile[@]}"
ex=${CARGO_TARGET_DIR:-target}/$([[ -n "${BENCH:-}" ]] && echo release || echo debug)/examples/dp_digits
for np in 1 2 4; do
  timeout 300 mpirun -np "$np" --oversubscribe "$ex" --epochs 3 --min-accuracy 0.8
done
echo "test_mpi: all ok in $(( $(date +%s) - start )) s"
