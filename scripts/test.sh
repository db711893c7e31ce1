#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (tests needing a GPU skip without one).
# Usage: scripts/test.sh [--sanitize asan|tsan] [extra CMake arguments]
#   (or PIPELAB_SANITIZE=asan|tsan scripts/test.sh ...)
#   --sanitize asan  AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/ (clang when
#                    installed, which also builds the libFuzzer targets for scripts/fuzz.sh; CUDA and
#                    benchmarks off), then the whole suite under it.
#   --sanitize tsan  ThreadSanitizer build in build-tsan/ of the runtime tests only (the threaded
#                    code: executor, transports, rank threads), then those tests under it.
# A sanitizer report fails the test it happens in (cmake/sanitizers.cmake, docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
sanitize="${PIPELAB_SANITIZE:-}"
if [ "${1:-}" = "--sanitize" ]; then
  sanitize="${2:?--sanitize needs asan or tsan}"
  shift 2
elif [[ "${1:-}" == --sanitize=* ]]; then
  sanitize="${1#--sanitize=}"
  shift
fi
scripts/install-deps.sh

ctest_args=(--output-on-failure -j "$(nproc)")
case "$sanitize" in
  "")
    scripts/build.sh "$@"
    build_dir="${PIPELAB_BUILD_DIR:-build}"
    ;;
  asan|tsan)
    common=(-DPIPELAB_CUDA=OFF -DPIPELAB_BUILD_BENCH=OFF)
    if command -v clang++ > /dev/null; then
      export CC=clang CXX=clang++
      [ "$sanitize" = asan ] && common+=(-DPIPELAB_FUZZ=ON)
    fi
    if [ "$sanitize" = asan ]; then
      build_dir="${PIPELAB_BUILD_DIR:-build-asan}"
      PIPELAB_BUILD_DIR="$build_dir" scripts/build.sh -DPIPELAB_SANITIZE=address,undefined "${common[@]}" "$@"
    else
      build_dir="${PIPELAB_BUILD_DIR:-build-tsan}"
      PIPELAB_BUILD_DIR="$build_dir" PIPELAB_BUILD_TARGETS="pipelab_runtime_tests" \
        scripts/build.sh -DPIPELAB_SANITIZE=thread "${common[@]}" "$@"
      ctest_args+=(-L runtime)
    fi
    ;;
  *)
    echo "scripts/test.sh: --sanitize takes asan or tsan, got '$sanitize'" >&2
    exit 2
    ;;
esac
ctest --test-dir "$build_dir" "${ctest_args[@]}"
