#!/usr/bin/env bash
# The fuzz stage of .ci/run, and the command for fuzzing by hand (the test suite only replays the
# seed corpora): builds the libFuzzer targets of tests/fuzz with the "fuzz" preset (clang, ASan +
# UBSan, build-fuzz/) and lets ctest run each one for VRAMLAB_FUZZ_SECONDS (default 5; CI sets 20)
# over its seed corpus and what it found before. Extra arguments go to ctest.
# The preset compiles at -O1 with line tables only (-gline-tables-only): sanitizer reports still name
# file and line, and the build takes 80 s instead of 92 s with full debug information on 2 cores
# (-O0 would take 48 s but run 5-13x fewer inputs per second).
# Without clang and libFuzzer it says what to install and exits 0, unless CI=true (then 2).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$VRAMLAB_ROOT"

# clang 14 ships libFuzzer's runtime in libclang-rt-14-dev; link a one-line target to be sure.
probe_dir=$(mktemp -d)
trap 'rm -rf "$probe_dir"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
  >"$probe_dir/probe.cpp"
if ! command -v clang++ >/dev/null 2>&1 ||
   ! clang++ -fsanitize=fuzzer,address,undefined "$probe_dir/probe.cpp" -o "$probe_dir/probe" \
     >/dev/null 2>&1; then
  echo "vramlab: the fuzz stage needs clang with libFuzzer (Debian: clang libclang-rt-14-dev libomp-dev, listed in tools/debian-packages-test.txt)" >&2
  if [[ "${CI:-}" == "true" ]]; then exit 2; fi
  echo "vramlab: fuzz stage skipped" >&2
  exit 0
fi

cmake --preset fuzz -DVRAMLAB_FUZZ_SECONDS="${VRAMLAB_FUZZ_SECONDS:-5}"
cmake --build --preset fuzz
status=0
ctest --preset fuzz "$@" || status=$?
# ctest keeps each target's output; the runs each one made are the numbers worth reading.
awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3} /^Done [0-9]+ runs in/{print "vramlab fuzz: " name ": " $0}' \
  build-fuzz/Testing/Temporary/LastTest.log || true
exit "$status"
