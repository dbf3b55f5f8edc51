#!/usr/bin/env bash
# The README's second command: install what the suite needs beside setup's packages
# (tools/debian-packages-test.txt), build everything (the test suite and the benchmarks too) and run
# the whole test suite with ctest, the fuzz targets' seed corpora among it (label fuzz_corpus).
# Fuzzing itself is tools/fuzz.sh (clang's libFuzzer in build-fuzz/), which CI runs after this.
# Extra arguments go to ctest (e.g. tools/test.sh -R Allocator). `tools/test.sh --deps-only` only
# installs the packages.
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
