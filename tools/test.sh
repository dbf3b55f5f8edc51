#!/usr/bin/env bash
# The README's second command: install what the suite needs beside setup's packages
# (tools/debian-packages-test.txt), build everything (the test suite and the benchmarks too) and run
# the whole test suite with ctest, then the fuzz stage (tools/fuzz.sh: every libFuzzer target of
# tests/fuzz over its seed corpus for a bounded time).
# Extra arguments go to ctest (e.g. tools/test.sh -R Allocator) and skip the fuzz stage, as does
# VRAMLAB_SKIP_FUZZ=1. `tools/test.sh --deps-only` only installs the packages.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$VRAMLAB_ROOT"

vramlab_install_packages
vramlab_install_packages "$VRAMLAB_ROOT/tools/debian-packages-test.txt"
if [[ "${1:-}" == "--deps-only" ]]; then
  exit 0
fi
preset=$(vramlab_preset)
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset" -j "$(vramlab_test_jobs)" "$@"
if [[ $# -eq 0 && "${VRAMLAB_SKIP_FUZZ:-}" != "1" ]]; then
  bash "$VRAMLAB_ROOT/tools/fuzz.sh"
fi
