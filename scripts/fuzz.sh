#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ (one per parser) for a bounded time, starting from its seed
# corpus (fuzz/corpus/<target>, made by fuzz/make_corpus.sh) and its regression inputs.
# Usage: scripts/fuzz.sh [--seconds N] [target ...]     (default: 10 s each, every target)
# Builds the targets in build-asan/ (clang, ASan + UBSan: scripts/build-sanitized.sh asan, the build
# `scripts/test.sh --sanitize asan` tests) unless $PIPELAB_BUILD_DIR names another. New inputs go to
# out/fuzz/corpus/<target>/, crashes, leaks and timeouts to out/fuzz/findings/<target>/; the script
# fails when a target finds one. Without clang it says so and exits 0. For a longer campaign see
# docs/testing.md ("Fuzzing").
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=10
if [ "${1:-}" = "--seconds" ]; then
  seconds="${2:?--seconds needs a number}"
  shift 2
fi
if ! command -v clang++ > /dev/null; then
  echo "fuzz: clang++ not found (scripts/install-deps.sh installs it); skipping the fuzz targets"
  exit 0
fi
build_dir="${PIPELAB_BUILD_DIR:-build-asan}"
PIPELAB_BUILD_DIR="$build_dir" PIPELAB_BUILD_TARGETS=fuzz scripts/build-sanitized.sh asan > /dev/null
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
  for dir in fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
fi
# Reports stop at the first error; leaks are findings too.
export ASAN_OPTIONS="detect_stack_use_after_return=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
failed=0
for t in "${targets[@]}"; do
  exe="$build_dir/fuzz/fuzz_$t"
  [ -x "$exe" ] || { echo "fuzz: no target $t (built with libFuzzer? see $build_dir/CMakeCache.txt)" >&2; exit 2; }
  work="out/fuzz/corpus/$t" findings="out/fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  seeds=(fuzz/corpus/"$t")
  [ -d fuzz/regressions/"$t" ] && seeds+=(fuzz/regressions/"$t")
  log="out/fuzz/$t.log"
  # -timeout: an input running 10 s is a hang; -rss_limit_mb: one using 2 GB exhausts the machine.
  if "$exe" "$work" "${seeds[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="$findings/" -print_final_stats=1 > "$log" 2>&1; then
    status=ok
  else
    status=FINDING
    failed=1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  printf 'fuzz %-16s %s  %8s executions in %ss  %s\n' "$t" "$status" "${runs:-?}" "$seconds" "$cov"
  [ "$status" = ok ] || { grep -m3 -E "ERROR|runtime error|Test unit written|deadly signal" "$log" || true; }
done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: FAILED: findings in out/fuzz/findings/ (logs in out/fuzz/)"
  exit 1
fi
echo "fuzz: OK"
