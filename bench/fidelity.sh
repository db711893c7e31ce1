#!/usr/bin/env bash
# Fidelity of the simulator against real runs (docs/runtime.md, "Fidelity method"): for every
# schedule at PP=2 on this machine, profile once, then `pipelab run --check-fidelity`, which compares
# the predicted with the measured iteration and exits 1 outside the fidelity thresholds.
#
#   bench/fidelity.sh [--pipelab PATH] [--transport inproc|mpi] [--microbatches M] [--iterations K]
#                     [--warmup W] [--out DIR] [-- extra model flags for profile and run]
#
# Prints, per schedule, the run's comparison line and its verdict, and a footer that says OK when
# every run is within the thresholds, FAILED otherwise (exit code 1). The verdict and the thresholds
# are pipelab's own (kFidelityThresholds); this script only counts exit codes. A warning that a rank
# ran off its profiled time means the machine ran slower or faster than when it was profiled (other
# load, clock drift), not a modelling error. Run it on an otherwise idle machine: the measurement
# needs one core per rank.
set -euo pipefail
# (Arrays that may be empty expand as ${arr[@]+"${arr[@]}"}: bash < 4.4 treats "${arr[@]}" of an
# empty array as unset under set -u.)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pipelab="${PIPELAB:-$root/build/apps/pipelab}"
transport=inproc
microbatches=8
iterations=7
warmup=3
out="${TMPDIR:-/tmp}/pipelab-fidelity"
extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pipelab) pipelab="$2"; shift 2 ;;
    --transport) transport="$2"; shift 2 ;;
    --microbatches) microbatches="$2"; shift 2 ;;
    --iterations) iterations="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "fidelity.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -x "$pipelab" ]] || { echo "fidelity.sh: no pipelab binary at $pipelab (build first, or --pipelab PATH)" >&2; exit 2; }
mkdir -p "$out"

schedules=(gpipe 1f1b interleaved-1f1b looped-bfs zb-h1 zb-h2 zb-v dualpipe dualpipev)
launch=()
if [[ "$transport" == mpi ]]; then
  launch=(mpirun -np 2 --allow-run-as-root --oversubscribe --bind-to none)
fi

echo "# profiling once: $out/profile.json"
${launch[@]+"${launch[@]}"} "$pipelab" profile --backend cpu --transport "$transport" --out "$out/profile.json" \
  ${extra[@]+"${extra[@]}"} > "$out/profile.txt"
sed 's/^/#   /' "$out/profile.txt"

failed=0
for s in "${schedules[@]}"; do
  log="$out/run-$s.txt"
  rc=0
  ${launch[@]+"${launch[@]}"} "$pipelab" run --backend cpu --transport "$transport" --schedule "$s" --pp 2 \
    --microbatches "$microbatches" --iterations "$iterations" --warmup "$warmup" --profile "$out/profile.json" \
    --check-fidelity --json "$out/run-$s.json" ${extra[@]+"${extra[@]}"} > "$log" 2>&1 || rc=$?
  case $rc in
    0) verdict=ok ;;
    1) verdict=MISS; failed=$((failed + 1)) ;;
    *) printf '  %-17s run failed (exit %d): see %s\n' "$s" "$rc" "$log"; failed=$((failed + 1)); continue ;;
  esac
  printf '  %-17s %s: %s\n' "$s" "$verdict" "$(grep -m1 '^makespan error' "$log")"
  grep '^pipelab: warning' "$log" | sed 's/^/      /' || true
done
# The thresholds as pipelab states them ("# fidelity: within <thresholds>: OK").
thresholds=$(sed -n 's/^# fidelity: [a-z]* \(.*\): [A-Z]*$/\1/p' "$out"/run-*.txt | head -1)
if [[ $failed -eq 0 ]]; then
  echo "# fidelity: all ${#schedules[@]} schedules within ${thresholds}: OK"
else
  echo "# fidelity: $failed of ${#schedules[@]} schedules outside ${thresholds:-the thresholds} or failed: FAILED"
  exit 1
fi
