#!/usr/bin/env bash
# The README's first command: install what is missing (Debian 12), build the vramlab command and the
# lesson binaries (Release; the target learner_binaries) and run the main demo. The test suite,
# the benchmarks and the fuzz targets are tools/test.sh's; an exercise's tests are built when
# `vramlab check` first asks for them. Idempotent: a second run installs nothing and rebuilds only
# what changed (through ccache, which it installs, even in a new build directory).
#
#   tools/setup.sh              set up, build, run the demo
#   tools/setup.sh --deps-only  only install the Debian packages (tools/debian-packages.txt)
#   tools/setup.sh --with-peers also install the peers vramlab compares itself with: Debian's
#                               PyTorch 1.13, and PyTorch 2.x from PyPI in venv-torch/ (a large
#                               download) for what 1.13 lacks (scaled_dot_product_attention),
#                               with bitsandbytes (8-bit block-wise quantization)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$VRAMLAB_ROOT"

deps_only=0
with_peers=0
for arg in "$@"; do
  case "$arg" in
    --deps-only) deps_only=1 ;;
    --with-peers) with_peers=1 ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "vramlab: error: unknown option '$arg' (expected --deps-only, --with-peers or --help)" >&2; exit 2 ;;
  esac
done

vramlab_install_packages
if [[ $with_peers -eq 1 ]]; then
  vramlab_install_packages "$VRAMLAB_ROOT/tools/debian-packages-peers.txt"
  # bench/compare_sdpa.py (lesson 06) needs torch >= 2.0; the venv is made once.
  if ! venv-torch/bin/python -c 'import torch.nn.functional as F; F.scaled_dot_product_attention' \
      2>/dev/null; then
    python3 -m venv venv-torch
    venv-torch/bin/pip install --quiet torch
  fi
  # bench/compare_bitsandbytes.py (lesson 09) runs bitsandbytes' CPU block-wise quantization.
  if ! venv-torch/bin/python -c 'import bitsandbytes' 2>/dev/null; then
    venv-torch/bin/pip install --quiet bitsandbytes
  fi
fi
[[ $deps_only -eq 1 ]] && exit 0

preset=$(vramlab_preset)
cmake --preset "$preset"
cmake --build --preset "$preset" --target learner_binaries

echo
echo "vramlab: built. What this machine can run:"
build/bin/vramlab doctor --no-gemm | sed -n '/^GPU/,/^CPU/p' | sed '$d'
echo
echo "The main demo, lesson 01 (one real training step, every byte accounted for):"
echo
exec build/bin/lesson01_memory_breakdown
