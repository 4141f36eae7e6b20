#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each, one after another, on a scratch copy of its seed
# corpus (tests/fuzz/corpus/TARGET/), after replaying its regressions (tests/fuzz/regressions/
# TARGET/). Builds build-sanitize/ first where a target is missing (tests/sanitize.sh --build).
# Fails when any target reports a crash, a hang, a leak or a sanitizer report; what it failed on
# is kept in out/fuzz/TARGET/ (copy it into regressions/TARGET/ with the fix).
#   tests/fuzz/run.sh SECONDS [TARGET...]
#   FUZZ_ARGS="-runs=10000000"   extra libFuzzer options (the long run in tests/README.md)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:?usage: tests/fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(trace run_config profile topology sweep alloc_history
                                    raw_capture)
bin=build-sanitize/fuzz
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz_$t" ] || { tests/sanitize.sh --build; break; }
done
if [ ! -x "$bin/fuzz_${targets[0]}" ]; then
  echo "fuzz: no fuzz targets in $bin (clang missing?): skipping" >&2
  exit 0
fi

export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
passed=0 failed=0
for t in "${targets[@]}"; do
  out=out/fuzz/$t
  rm -rf "$out"
  mkdir -p "$out" "$scratch/$t"
  cp tests/fuzz/corpus/"$t"/* "$scratch/$t"/
  log=$out/fuzz.log
  status=0
  if [ -d tests/fuzz/regressions/"$t" ]; then
    "$bin/fuzz_$t" -runs=0 tests/fuzz/regressions/"$t" >"$log" 2>&1 || status=$?
  fi
  if [ $status -eq 0 ]; then
    # Inputs grow up to the largest seed's size (libFuzzer's default -max_len). -timeout: an
    # input that takes 10 s is a hang; -rss_limit_mb: 2 GB from a few KB is a finding too (a size
    # field believed).
    # shellcheck disable=SC2086
    "$bin/fuzz_$t" "$scratch/$t" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/" ${FUZZ_ARGS:-} \
      >>"$log" 2>&1 || status=$?
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $status -eq 0 ]; then
    passed=$((passed + 1))
    echo "fuzz: $t: ${runs:-0} runs in ${seconds} s or fewer, nothing found"
  else
    failed=$((failed + 1))
    echo "fuzz: $t: FAILED (exit $status); the log and the input are in $out/" >&2
    grep -E "^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*uncaught exception|.*Test unit written)" \
      "$log" | head -5 >&2 || true
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
