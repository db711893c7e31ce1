#!/usr/bin/env bash
# Fidelity of the simulator against real runs (DESIGN.md §8): for every schedule at PP=2 on this
# machine, profile once, run, and compare the predicted with the measured iteration.
#
#   bench/fidelity.sh [--pipelab PATH] [--transport inproc|mpi] [--microbatches M] [--iterations K]
#                     [--warmup W] [--out DIR] [-- extra model flags for profile and run]
#
# Prints a table (schedule | predicted | measured | error % | bubble pred/meas | compute) and a footer
# that says OK when every schedule is within 5% makespan error and 0.02 bubble ratio, FAILED otherwise
# (exit code 1). "compute" is the largest per-rank median of measured / profiled action time: far from
# 1.00 means the machine ran slower or faster than when it was profiled (other load, clock drift), not
# a modelling error. Run it on an otherwise idle machine: the measurement needs one core per rank.
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
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
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

# One number of the result JSON's "comparison" object (parsed as JSON, whatever its layout).
field() {
  python3 -c 'import json, sys; print(repr(float(json.load(open(sys.argv[1]))["comparison"][sys.argv[2]])))' "$1" "$2"
}
# The per-rank ratios of "compute_time_ratio": the one farthest from 1.
worst_ratio() {
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["comparison"]["compute_time_ratio"]
print("%.3f" % max(r, key=lambda x: abs(x - 1), default=1.0))' "$1"
}

echo "# profiling once: $out/profile.json"
${launch[@]+"${launch[@]}"} "$pipelab" profile --backend cpu --transport "$transport" --out "$out/profile.json" \
  ${extra[@]+"${extra[@]}"} > "$out/profile.txt"
sed 's/^/#   /' "$out/profile.txt"

printf '# %-17s %12s %12s %9s %16s %8s  %s\n' schedule predicted measured error "bubble pred/meas" compute check
printf '# %-17s %12s %12s %9s %16s %8s\n' "" "(ms)" "(ms)" "(%)" "(ratio)" "(x)"
failed=0
for s in "${schedules[@]}"; do
  json="$out/run-$s.json"
  if ! ${launch[@]+"${launch[@]}"} "$pipelab" run --backend cpu --transport "$transport" --schedule "$s" --pp 2 \
       --microbatches "$microbatches" --iterations "$iterations" --warmup "$warmup" --profile "$out/profile.json" \
       --json "$json" ${extra[@]+"${extra[@]}"} > "$out/run-$s.txt" 2>&1; then
    printf '  %-17s run failed: see %s\n' "$s" "$out/run-$s.txt"
    failed=$((failed + 1))
    continue
  fi
  pred=$(field "$json" makespan_predicted_ns)
  meas=$(field "$json" makespan_measured_ns)
  err=$(field "$json" makespan_error)
  bp=$(field "$json" bubble_predicted)
  bm=$(field "$json" bubble_measured)
  ratio=$(worst_ratio "$json")
  verdict=$(awk -v e="$err" -v a="$bp" -v b="$bm" 'BEGIN { d = a - b; if (d < 0) d = -d; if (e < 0) e = -e;
            print (e <= 0.05 && d <= 0.02) ? "ok" : "MISS" }')
  [[ "$verdict" == ok ]] || failed=$((failed + 1))
  awk -v s="$s" -v p="$pred" -v m="$meas" -v e="$err" -v a="$bp" -v b="$bm" -v r="$ratio" -v v="$verdict" \
    'BEGIN { printf "  %-17s %12.3f %12.3f %+9.2f %7.3f / %6.3f %8.3f  %s\n", s, p / 1e6, m / 1e6, 100 * e, a, b, r, v }'
done
if [[ $failed -eq 0 ]]; then
  echo "# fidelity: all ${#schedules[@]} schedules within 5% makespan and 0.02 bubble: OK"
else
  echo "# fidelity: $failed of ${#schedules[@]} schedules outside 5% makespan or 0.02 bubble: FAILED"
  exit 1
fi
