#!/usr/bin/env bash
# Configures and builds a sanitizer build (docs/testing.md): the one place its CMake arguments live,
# so scripts/test.sh and scripts/fuzz.sh share one build directory without reconfiguring it.
# Usage: scripts/build-sanitized.sh asan|tsan [extra CMake arguments]
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/, every target; with clang
#         also the libFuzzer targets of fuzz/ (PIPELAB_FUZZ).
#   tsan  ThreadSanitizer in build-tsan/, the runtime tests only (the threaded code).
# clang when installed (gcc otherwise); CUDA and the benchmarks are off. $PIPELAB_BUILD_DIR names
# another directory, $PIPELAB_BUILD_TARGETS other targets (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
kind="${1:?usage: scripts/build-sanitized.sh asan|tsan [CMake arguments]}"
shift
args=(-DPIPELAB_CUDA=OFF -DPIPELAB_BUILD_BENCH=OFF)
clang=no
if command -v clang++ > /dev/null; then
  export CC=clang CXX=clang++
  clang=yes
fi
case "$kind" in
  asan)
    args+=(-DPIPELAB_SANITIZE=address,undefined)
    if [ "$clang" = yes ]; then args+=(-DPIPELAB_FUZZ=ON); fi
    ;;
  tsan)
    args+=(-DPIPELAB_SANITIZE=thread)
    export PIPELAB_BUILD_TARGETS="${PIPELAB_BUILD_TARGETS:-pipelab_runtime_tests}"
    ;;
  *)
    echo "scripts/build-sanitized.sh: asan or tsan, got '$kind'" >&2
    exit 2
    ;;
esac
PIPELAB_BUILD_DIR="${PIPELAB_BUILD_DIR:-build-$kind}" scripts/build.sh "${args[@]}" "$@"
