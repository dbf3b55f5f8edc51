#!/usr/bin/env bash
# The README's second command: build vramlab and run the whole test suite with ctest, then the fuzz
# stage (tools/fuzz.sh: every libFuzzer target of tests/fuzz for a bounded time, ~2 min).
# Extra arguments go to ctest (e.g. tools/test.sh -R Allocator) and skip the fuzz stage, as does
# VRAMLAB_SKIP_FUZZ=1.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$VRAMLAB_ROOT"

vramlab_install_packages
preset=$(vramlab_preset)
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset" "$@"
if [[ $# -eq 0 && "${VRAMLAB_SKIP_FUZZ:-}" != "1" ]]; then
  bash "$VRAMLAB_ROOT/tools/fuzz.sh"
fi
