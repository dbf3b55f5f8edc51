# Shared by tools/setup.sh, tools/test.sh and .ci/run: find the repository, check and install the
# Debian packages vramlab builds with (tools/debian-packages.txt), pick the CMake preset.
VRAMLAB_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Prints the packages from the list file $1 (default tools/debian-packages.txt) that are not installed.
vramlab_missing_packages() {
  local list="${1:-$VRAMLAB_ROOT/tools/debian-packages.txt}" pkg status
  while read -r pkg; do
    [[ -z "$pkg" || "$pkg" == \#* ]] && continue
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || printf '%s\n' "$pkg"
  done < "$list"
}

# Installs what is missing from the list file $1 (default tools/debian-packages.txt) when run as
# root; otherwise prints the exact sudo line and exits 2.
vramlab_install_packages() {
  local list="${1:-$VRAMLAB_ROOT/tools/debian-packages.txt}"
  if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "vramlab: error: this set-up script expects Debian 12 (dpkg-query not found); install the packages in tools/debian-packages.txt by hand" >&2
    exit 2
  fi
  local missing
  missing=$(vramlab_missing_packages "$list" | tr '\n' ' ')
  missing=${missing% }
  if [[ -z "$missing" ]]; then
    echo "vramlab: all Debian packages of $(basename "$list") present"
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    echo "vramlab: error: missing Debian packages. Install them with:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends $missing" >&2
    exit 2
  fi
  echo "vramlab: installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing
}

# The CMake preset: 'ci' (warnings as errors, CUDA compile-check required) under CI=true,
# otherwise 'release'; VRAMLAB_PRESET overrides both.
vramlab_preset() {
  if [[ -n "${VRAMLAB_PRESET:-}" ]]; then
    echo "$VRAMLAB_PRESET"
  elif [[ "${CI:-}" == "true" ]]; then
    echo ci
  else
    echo release
  fi
}

# ctest's parallelism: one more test than cores, since many tests spend their time starting
# processes or waiting (mpirun, the communicator's watchdog): the Release suite took 240 s with 2
# jobs, 223 s with 3 and 228 s with 4 on 2 cores.
vramlab_test_jobs() {
  echo $(( $(nproc) + 1 ))
}
