#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (tests needing a GPU skip without one).
# Usage: scripts/test.sh [--sanitize asan|tsan] [extra CMake arguments]
#   (or PIPELAB_SANITIZE=asan|tsan scripts/test.sh ...)
#   --sanitize asan  AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/, then the
#                    whole suite under it
#   --sanitize tsan  ThreadSanitizer build in build-tsan/, then the runtime tests under it
#   (scripts/build-sanitized.sh says how each is built).
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
    scripts/build-sanitized.sh "$sanitize" "$@"
    build_dir="${PIPELAB_BUILD_DIR:-build-$sanitize}"
    [ "$sanitize" = tsan ] && ctest_args+=(-L runtime)
    ;;
  *)
    echo "scripts/test.sh: --sanitize takes asan or tsan, got '$sanitize'" >&2
    exit 2
    ;;
esac
ctest --test-dir "$build_dir" "${ctest_args[@]}"
