#!/usr/bin/env bash
# Configures and builds pipelab into build/ (or $PIPELAB_BUILD_DIR). Extra arguments go to CMake,
# e.g. scripts/build.sh -DPIPELAB_CUDA=OFF. $PIPELAB_BUILD_TARGETS (space-separated) builds only
# those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${PIPELAB_BUILD_DIR:-build}"
build_type="${PIPELAB_BUILD_TYPE:-Release}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "$@"
targets=()
for t in ${PIPELAB_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
