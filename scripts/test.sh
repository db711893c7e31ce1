#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (tests needing a GPU skip without one).
# Usage: scripts/test.sh [extra CMake arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh "$@"
ctest --test-dir "${PIPELAB_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
