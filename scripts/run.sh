#!/usr/bin/env bash
# The main job on embedded defaults: installs dependencies, builds, compares every schedule for
# llama3-70b on 64 x h100-sxm (TP4 PP4 DP4, 32 microbatches of 4096 tokens), prints the summary
# table and writes out/report.html (plus out/compare.json, the result it is rendered from).
# Usage: scripts/run.sh [extra pipelab compare flags, e.g. --seq 8192 --recompute selective]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
pipelab="${PIPELAB_BUILD_DIR:-build}/apps/pipelab"
mkdir -p out
"$pipelab" compare --model llama3-70b --gpu h100-sxm --tp 4 --pp 4 --dp 4 --mbs 1 --gbs 128 --seq 4096 \
  --schedules gpipe,1f1b,interleaved-1f1b,looped-bfs,zb-h1,zb-h2,zb-v,dualpipe,dualpipev \
  --json out/compare.json --report out/report.html "$@"
echo "report: $(pwd)/out/report.html"
