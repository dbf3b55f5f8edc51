#!/usr/bin/env bash
# The README's first command: install what is missing (Debian 12), build vramlab (Release) and run
# the main demo. Idempotent: a second run installs nothing and rebuilds only what changed.
#
#   tools/setup.sh              set up, build, run the demo
#   tools/setup.sh --deps-only  only install the Debian packages
#   tools/setup.sh --with-peers also install the peers vramlab compares itself with (PyTorch)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$VRAMLAB_ROOT"

deps_only=0
with_peers=0
for arg in "$@"; do
  case "$arg" in
    --deps-only) deps_only=1 ;;
    --with-peers) with_peers=1 ;;
    -h|--help) sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "vramlab: error: unknown option '$arg' (expected --deps-only, --with-peers or --help)" >&2; exit 2 ;;
  esac
done

vramlab_install_packages
[[ $with_peers -eq 1 ]] && vramlab_install_packages "$VRAMLAB_ROOT/tools/debian-packages-peers.txt"
[[ $deps_only -eq 1 ]] && exit 0

preset=$(vramlab_preset)
cmake --preset "$preset"
cmake --build --preset "$preset"

echo
echo "vramlab: built. What this machine can run:"
build/bin/vramlab doctor --no-gemm | sed -n '/^GPU/,/^CPU/p' | sed '$d'
echo
echo "The main demo, lesson 01 (one real training step, every byte accounted for):"
echo
exec build/bin/lesson01_memory_breakdown
