#!/usr/bin/env bash
# The README's second command: build vramlab and run the whole test suite with ctest.
# Extra arguments go to ctest (e.g. tools/test.sh -R Allocator).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$VRAMLAB_ROOT"

vramlab_install_packages
preset=$(vramlab_preset)
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset" "$@"
