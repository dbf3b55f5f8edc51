#!/bin/sh
# Our MpiCommunicator's collectives beside the plain MPI calls, measured in one run under
# mpirun with 4 ranks (bench/dist/bench_collectives.cpp says how), printed per collective and
# size with the ratio ours / MPI. The goal (issue #16): ours within 10% of MPI's own.
#
#   bench/compare_collectives.sh [build-dir] [ranks]      (defaults: build, 4)
#
# Build first: cmake --build --preset release --target bench_collectives
set -eu
build=${1:-build}
ranks=${2:-4}
binary=$build/bench/bin/bench_collectives
[ -x "$binary" ] || { echo "no $binary: build the bench_collectives target first" >&2; exit 2; }
json=$(mktemp)
trap 'rm -f "$json"' EXIT
# OpenMPI refuses root and more ranks than cores unless told; both are fine for a benchmark.
mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$binary" \
  --benchmark_format=json --benchmark_out="$json" --benchmark_out_format=json >/dev/null
python3 - "$json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
ranks = int(runs[0]["ranks"]) if runs else 0
print(f"MpiCommunicator vs plain MPI, {ranks} ranks, f32; a call's time is the slowest rank's;")
print("median over the iterations; ratio: median of each iteration's ours / MPI")
print(f"{'collective':<16}{'size':>8}{'ours ms':>12}{'MPI ms':>12}{'ratio':>8}  within 10%")
worst = 0.0
for run in runs:
    name, size = run["label"].split()[:2]
    worst = max(worst, run["ratio"])
    print(f"{name:<16}{size + ' MiB':>8}{run['ours_ms']:>12.3f}{run['mpi_ms']:>12.3f}"
          f"{run['ratio']:>8.3f}  {'yes' if run['ratio'] <= 1.10 else 'NO'}")
print(f"worst ratio {worst:.3f}")
PY
