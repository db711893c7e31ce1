#!/usr/bin/env bash
# Fits the shipped GPU presets to the published runs in calibration/ with `pipelab calibrate`, so the
# presets' efficiency constants are reproducible. Deterministic: the same build and tables give the
# same JSON byte for byte.
# Usage: scripts/fit-presets.sh [--out DIR] [--loo] [--build DIR]
#   --out DIR   write DIR/<preset>.json (the fitted spec, named as the preset) and DIR/<preset>.report.json;
#               `--out profiles/gpus` replaces the shipped presets (then rebuild: they are compiled in)
#   (default)   print each fitted spec as a diff against profiles/gpus/<preset>.json, write nothing
#   --loo       also report leave-one-out errors (one refit per run: minutes)
#   --build DIR the build with the pipelab binary (default: $PIPELAB_BUILD_DIR or build)
set -euo pipefail
cd "$(dirname "$0")/.."

# preset  run table  (add a row per preset fitted to published results). calibration/nemo-dgx-b200.csv,
# nemo-dgx-gb200.csv and a100.csv are held-out checks (docs/calibration.md): fitting to one makes it a fit, not a check.
presets=(
  "h100-sxm calibration/nemo-dgx-h100.csv"
)

out="" loo=() build="${PIPELAB_BUILD_DIR:-build}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --loo) loo=(--loo); shift ;;
    --build) build="$2"; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "fit-presets.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
pipelab="$build/apps/pipelab"
[[ -x "$pipelab" ]] || { echo "fit-presets.sh: no $pipelab; build first (scripts/build.sh)" >&2; exit 2; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# JSON with sorted keys, for a diff that shows values rather than layout.
normalize() { if command -v jq >/dev/null; then jq -S . "$1"; else python3 -m json.tool --sort-keys "$1"; fi; }

for entry in "${presets[@]}"; do
  read -r preset runs <<<"$entry"
  dir="${out:-$tmp}"
  mkdir -p "$dir"
  echo "# fitting $preset to $runs"
  # Start from the shipped JSON file, not the compiled-in copy, so a refit starts from what is on disk.
  "$pipelab" calibrate --runs "$runs" --gpu "profiles/gpus/$preset.json" --name "$preset" "${loo[@]}" \
    --out "$dir/$preset.json" --json "$dir/$preset.report.json"
  if [[ -z "$out" ]]; then
    echo "# profiles/gpus/$preset.json -> fitted (keys sorted):"
    diff -u --label "profiles/gpus/$preset.json" --label "fitted $preset" \
      <(normalize "profiles/gpus/$preset.json") <(normalize "$dir/$preset.json") || true
  fi
done
