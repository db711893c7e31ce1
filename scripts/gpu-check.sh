#!/usr/bin/env bash
# The GPU check, on a machine with a GPU: builds with CUDA on, runs the device tests (ctest label
# gpu), profiles the mock model on the GPU, runs every schedule in single-GPU mode (and across GPUs
# with NCCL when there are several) with --check-gradients, and prints predicted vs measured from
# the profile. Without a GPU it says so and exits 0.
#   scripts/gpu-check.sh [extra CMake arguments]
# On a cluster node without package access, make the dependency prefix elsewhere
# (scripts/make-dep-prefix.sh), carry it over and pass it:
#   PIPELAB_DEP_PREFIX=$PWD/.deps/prefix scripts/gpu-check.sh -DPIPELAB_MPI=OFF
# Outputs go to out/gpu/ (profile, run results, report.md, report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no GPU on this machine (nvidia-smi lists none); nothing to check"
  exit 0
fi
build="${PIPELAB_BUILD_DIR:-build-gpu}"
out="${PIPELAB_GPU_OUT:-out/gpu}"
prefix_args=()
if [ -n "${PIPELAB_DEP_PREFIX:-}" ]; then
  prefix_args+=("-DCMAKE_PREFIX_PATH=${PIPELAB_DEP_PREFIX}/usr")
  lib="${PIPELAB_DEP_PREFIX}/usr/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="${lib}:${lib}/openblas-pthread:${LD_LIBRARY_PATH:-}"
fi
mkdir -p "$out"
nvidia-smi -L
PIPELAB_BUILD_DIR="$build" scripts/build.sh -DPIPELAB_CUDA=ON "${prefix_args[@]}" "$@"
section() { echo "== $1 (at ${SECONDS} s)"; }
pipelab="$build/apps/pipelab"

failed=0
section "device tests"
ctest --test-dir "$build" -L gpu --output-on-failure || failed=1

gpus=$(nvidia-smi -L | wc -l)
model=(--hidden 1024 --ffn 4096 --heads 8 --seq 1024 --mbs 1 --layers-per-stage 2 --swiglu)
schedules=(gpipe 1f1b interleaved-1f1b looped-bfs zb-h1 zb-h2 zb-v dualpipe dualpipev)
vp_of() { case "$1" in interleaved-1f1b|looped-bfs|zb-v|dualpipe|dualpipev) echo 2 ;; *) echo 1 ;; esac; }

section "single-GPU mode: 2 ranks on one GPU, each on its SM group (profiled the same way)"
"$pipelab" profile --backend cuda --ranks-per-gpu 2 "${model[@]}" --out "$out/profile-1gpu-pp2.json"
results=()
for s in "${schedules[@]}"; do
  "$pipelab" run --backend cuda --single-gpu --schedule "$s" --pp 2 --vp "$(vp_of "$s")" --microbatches 8 "${model[@]}" \
    --profile "$out/profile-1gpu-pp2.json" --iterations 5 --warmup 2 --check-gradients --json "$out/run-1gpu-$s.json" || failed=1
  results+=("$out/run-1gpu-$s.json")
done

section "CUPTI: every kernel and copy of a ZB-V iteration under its action (Chrome trace)"
"$pipelab" run --backend cuda --single-gpu --schedule zb-v --pp 2 --vp 2 --microbatches 8 "${model[@]}" \
  --profile "$out/profile-1gpu-pp2.json" --iterations 3 --warmup 1 --cupti --json "$out/run-cupti-zb-v.json" \
  --report "$out/zb-v.trace.json" || failed=1

if [ "$gpus" -ge 2 ]; then
  section "one GPU per rank: 2 ranks, NCCL"
  "$pipelab" profile --backend cuda "${model[@]}" --out "$out/profile-gpu.json"
  for s in "${schedules[@]}"; do
    "$pipelab" run --backend cuda --transport nccl --schedule "$s" --pp 2 --vp "$(vp_of "$s")" --microbatches 8 \
      "${model[@]}" --profile "$out/profile-gpu.json" --iterations 5 --warmup 2 --check-gradients --json "$out/run-nccl-$s.json" \
      || failed=1
    results+=("$out/run-nccl-$s.json")
  done
else
  section "one GPU per rank: skipped ($gpus GPU)"
fi

"$pipelab" report "${results[@]}" --out "$out/report.md"
"$pipelab" report "${results[@]}" --out "$out/report.html"
section "predicted vs measured (from $out/report.md)"
sed -n '/^## Predicted vs measured/,/^## /p' "$out/report.md" | sed '$d'
if [ "$failed" -ne 0 ]; then
  echo "gpu-check: FAILED (see above); outputs in $out/"
  exit 1
fi
echo "gpu-check: OK; outputs in $out/"
