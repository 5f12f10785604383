#!/usr/bin/env bash
# run.sh demo | test: installs what is missing (Debian packages), configures, builds, then runs
# apps/ag-demo on the default devices, or every test through ctest.
set -euo pipefail
cd "$(dirname "$0")"

usage() {
  echo "usage: ./run.sh demo [ag-demo options] | test [ctest options]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
what=$1
shift

packages=(cmake ninja-build g++ pkg-config ccache libcaf-dev libzmq3-dev cppzmq-dev libboost-dev catch2)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "run.sh: installing ${missing[*]}"
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B build -G Ninja "${launcher[@]}" -DAG_BUILD_TESTS=ON >/dev/null
  cmake --build build -j "$(nproc)"
}

case "$what" in
  demo)
    install_missing
    build
    exec ./build/apps/ag-demo "$@"
    ;;
  test)
    install_missing
    build
    exec ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600 "$@"
    ;;
  *) usage ;;
esac
