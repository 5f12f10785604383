#!/usr/bin/env bash
# run.sh demo | test | test-asan | test-tsan | fuzz [SECONDS]: installs what is missing (Debian
# packages), configures, builds, then runs apps/ag-demo on the default devices, or every test
# through ctest (plainly, under AddressSanitizer + UndefinedBehaviorSanitizer, or under
# ThreadSanitizer), or each libFuzzer target for SECONDS (default 60).
set -euo pipefail
cd "$(dirname "$0")"

usage() {
  echo "usage: ./run.sh demo [ag-demo options] | test [ctest options] | test-asan | test-tsan" \
       "| fuzz [seconds]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
what=$1
shift

packages=(cmake ninja-build g++ pkg-config ccache libcaf-dev libzmq3-dev cppzmq-dev libboost-dev libssl-dev catch2
          zlib1g-dev python3-sklearn pybind11-dev python3-dev python3-numpy python3-pytest
          python3-hypothesis)
[ "$what" = fuzz ] && packages+=(clang libclang-rt-dev)

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

# build DIR [cmake options]: configures DIR and builds $targets there (default: everything).
targets=()
build() {
  local dir=$1
  shift
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S . -B "$dir" -G Ninja "${launcher[@]}" -DAG_BUILD_TESTS=ON "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)" ${targets[@]+--target "${targets[@]}"}
}

# sanitized NAME FLAGS: a build without CUDA (its code needs a GPU to run) instrumented by FLAGS.
sanitized() {
  local flags="$2 -fno-omit-frame-pointer"
  build "build-$1" -DAG_WITH_CUDA=OFF -DAG_WITH_PYTHON=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$2" -DCMAKE_SHARED_LINKER_FLAGS="$2"
}

supp=$PWD/tests/sanitizers
case "$what" in
  demo)
    install_missing
    build build
    exec ./build/apps/ag-demo "$@"
    ;;
  test)
    install_missing
    build build
    exec ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 600 "$@"
    ;;
  test-asan)
    install_missing
    sanitized asan "-fsanitize=address,undefined -fno-sanitize-recover=undefined"
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1
    export LSAN_OPTIONS=suppressions=$supp/lsan.supp
    exec ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 900 "$@"
    ;;
  test-tsan)
    install_missing
    sanitized tsan "-fsanitize=thread"
    # ignore_noninstrumented_modules: what Debian's uninstrumented libraries (libzmq, CAF, OpenSSL)
    # do through interceptors (a message buffer malloc'd or recv'd on libzmq's I/O thread) is not
    # recorded, so handing such a buffer over is no race to report. Without it every read of a
    # 4 MiB piece met a suppressed report per word, and a node test stalled for minutes.
    export TSAN_OPTIONS="suppressions=$supp/tsan.supp halt_on_error=1 second_deadlock_stack=1 allocator_may_return_null=1 ignore_noninstrumented_modules=1"
    exec ctest --test-dir build-tsan --output-on-failure -j "$(nproc)" --timeout 900 "$@"
    ;;
  fuzz)
    install_missing
    seconds=${1:-60}
    root=$PWD
    targets=(fuzz-pubsub fuzz-pushpull fuzz-startup)
    build build-fuzz -DAG_FUZZ=ON -DAG_WITH_CUDA=OFF -DCMAKE_CXX_COMPILER=clang++
    for name in pubsub pushpull startup; do
      scratch=$(mktemp -d)
      cp tests/fuzz/corpus/$name/* "$scratch"/
      echo "fuzz-$name: ${seconds} s"
      status=0
      (cd "$scratch" && "$root/build-fuzz/tests/fuzz/fuzz-$name" -max_total_time="$seconds" \
        -max_len=65536 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$root/" .) \
        > "build-fuzz/fuzz-$name.log" 2>&1 || status=$?
      grep -E "stat::number_of_executed_units|ERROR|SUMMARY" "build-fuzz/fuzz-$name.log" || true
      rm -rf "$scratch"
      if [ $status -ne 0 ]; then
        echo "fuzz-$name failed (exit $status): see build-fuzz/fuzz-$name.log and ./crash-*" >&2
        exit 1
      fi
    done
    ;;
  *) usage ;;
esac
