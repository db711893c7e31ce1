#!/usr/bin/env bash
# The main job on embedded defaults: installs dependencies, builds, and prints a schedule
# comparison. Usage: scripts/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
pipelab="${PIPELAB_BUILD_DIR:-build}/apps/pipelab"
for schedule in 1f1b interleaved-1f1b zb-h1 zb-v dualpipev; do
  "$pipelab" show --schedule "$schedule" --pp 4 --microbatches 8
  echo
done
