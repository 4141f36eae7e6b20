#!/usr/bin/env bash
# Command-line checks for the faultline binary: bad inputs must fail with a non-zero status and
# a message that says what is wrong; --help, synth, trace stats and sim must work, and sim must
# be deterministic. Uses its own GPU and link profiles (FAULTLINE_CONFIGS), never configs/.
#
# usage: cli_errors.sh <path-to-faultline> <source-dir>
# Prints one line per check and ends with "N passed, M failed"; exits 1 if any check failed.
set -u

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <path-to-faultline> <source-dir>" >&2
  exit 2
fi
FAULTLINE=$1
SOURCE_DIR=$2
if [[ ! -x $FAULTLINE ]]; then
  echo "$0: $FAULTLINE is not an executable" >&2
  exit 2
fi
if [[ ! -d $SOURCE_DIR/sim ]]; then
  echo "$0: $SOURCE_DIR is not the faultline source tree" >&2
  exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/faultline-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

PASSED=0
FAILED=0
pass() {
  PASSED=$((PASSED + 1))
  echo "PASS: $1"
}
fail() {
  FAILED=$((FAILED + 1))
  echo "FAIL: $1"
  shift
  local line
  for line in "$@"; do echo "      $line"; done
}

# expect NAME STATUS STREAM FRAGMENT -- COMMAND...
#   STATUS: an exit status, or "nonzero". STREAM: stderr, stdout or any (both).
#   FRAGMENT: text the stream must contain (fixed string); empty: no check.
expect() {
  local name=$1 want=$2 stream=$3 fragment=$4
  shift 5
  "$@" >"$WORK/out" 2>"$WORK/err"
  local status=$?
  local text
  case $stream in
    stderr) text=$(cat "$WORK/err") ;;
    stdout) text=$(cat "$WORK/out") ;;
    *) text=$(cat "$WORK/out" "$WORK/err") ;;
  esac
  local ok=1
  if [[ $want == nonzero ]]; then
    [[ $status -ne 0 ]] || ok=0
  else
    [[ $status -eq $want ]] || ok=0
  fi
  if [[ -n $fragment && $text != *"$fragment"* ]]; then ok=0; fi
  if [[ $ok -eq 1 ]]; then
    pass "$name"
  else
    fail "$name" "command: $*" "exit status $status, expected $want" \
      "expected $stream to contain: $fragment" "stderr: $(head -c 600 "$WORK/err")" \
      "stdout: $(head -c 300 "$WORK/out")"
  fi
}

# Test profiles and run configs.
mkdir -p "$WORK/configs/gpus" "$WORK/configs/links"
cat >"$WORK/configs/gpus/testgpu.json" <<'EOF'
{"name": "testgpu", "sources": ["cli test profile"], "memory_bytes": 1073741824,
 "host_link": "testlink", "peer_link": "testlink", "batch_fixed_ns": 10000,
 "per_vablock_ns": 2000, "per_fault_ns": 100, "page_table_update_ns": 1000,
 "eviction_ns": 5000, "host_fault_ns": 3000, "fault_parallelism": 64}
EOF
cat >"$WORK/configs/links/testlink.json" <<'EOF'
{"name": "testlink", "sources": ["cli test profile"], "kind": "pcie",
 "forward": {"overhead_ns": 1000, "bandwidth_gbps": [[4096, 4.0], [65536, 16.0], [2097152, 32.0]]},
 "reverse": {"overhead_ns": 1000, "bandwidth_gbps": [[4096, 2.0], [65536, 8.0], [2097152, 16.0]]}}
EOF
export FAULTLINE_CONFIGS="$WORK/configs"
cat >"$WORK/run.json" <<'EOF'
{"description": "cli test", "gpu": "testgpu", "capacity": {"fraction_of_footprint": 0.5},
 "driver": {"batch_size": 128}, "policy": {"name": "ondemand"}, "per_kernel": true}
EOF
cat >"$WORK/unknown-key.json" <<'EOF'
{"gpu": "testgpu", "capacity": {"fraction_of_footprint": 0.5}, "policy": {"name": "ondemand"},
 "polcy": {"name": "ondemand"}}
EOF
cat >"$WORK/unknown-policy.json" <<'EOF'
{"gpu": "testgpu", "capacity": {"fraction_of_footprint": 0.5}, "policy": {"name": "nope"}}
EOF
cat >"$WORK/bad-json.json" <<'EOF'
{"gpu": "testgpu",
EOF

TRACE="$WORK/stream.fltrace"

# --- usage errors -------------------------------------------------------------------------------
expect "no arguments: exit 2 and the usage on stderr" 2 stderr "usage: faultline <command>" -- "$FAULTLINE"
expect "unknown command" 2 stderr 'unknown command "frobnicate"' -- "$FAULTLINE" frobnicate
expect "sim without --config" 2 stderr "--config is required" -- "$FAULTLINE" sim --trace x
expect "sim without --trace" 2 stderr "--trace is required" -- "$FAULTLINE" sim --config "$WORK/run.json"
expect "sim with an unknown option" 2 stderr "unknown option --bogus" -- \
  "$FAULTLINE" sim --config "$WORK/run.json" --trace x --bogus 1
expect "sim with an option missing its value" 2 stderr "--config needs a value" -- "$FAULTLINE" sim --config
expect "synth with an unknown unit" 2 stderr 'unknown unit "Q"' -- \
  "$FAULTLINE" synth --pattern stream --out "$WORK/q.fltrace" --footprint 12Q
expect "synth with a non-number" 2 stderr 'expected a number, got "lots"' -- \
  "$FAULTLINE" synth --pattern stream --out "$WORK/q.fltrace" --iterations lots
expect "trace with an unknown subcommand" 2 stderr 'unknown trace command "frob"' -- \
  "$FAULTLINE" trace frob x
expect "trace without a file" 2 stderr "usage: faultline trace" -- "$FAULTLINE" trace stats

# --- bad inputs ---------------------------------------------------------------------------------
expect "synth with an unknown pattern" nonzero stderr 'expected "stream", "random", "dnn", "window" or "pages", got "nope"' -- \
  "$FAULTLINE" synth --pattern nope --out "$WORK/nope.fltrace"

# A valid trace for the checks below.
expect "synth writes a trace" 0 stderr "accesses" -- \
  "$FAULTLINE" synth --pattern stream --footprint 64M --out "$TRACE"

expect "sim with a missing trace file" nonzero stderr "$WORK/nosuch.fltrace: cannot open trace" -- \
  "$FAULTLINE" sim --config "$WORK/run.json" --trace "$WORK/nosuch.fltrace" --no-progress
expect "sim with a missing config file" nonzero stderr "$WORK/nosuch.json: cannot open file" -- \
  "$FAULTLINE" sim --config "$WORK/nosuch.json" --trace "$TRACE" --no-progress
expect "sim with a config that is not JSON" nonzero stderr "$WORK/bad-json.json: invalid JSON" -- \
  "$FAULTLINE" sim --config "$WORK/bad-json.json" --trace "$TRACE" --no-progress
expect "sim with a config key typo" nonzero stderr "unknown-key.json: \$.polcy: unknown key" -- \
  "$FAULTLINE" sim --config "$WORK/unknown-key.json" --trace "$TRACE" --no-progress
expect "sim with an unknown policy" nonzero stderr 'unknown policy "nope"; known policies: ' -- \
  "$FAULTLINE" sim --config "$WORK/unknown-policy.json" --trace "$TRACE" --no-progress

TRACE_BYTES=$(wc -c <"$TRACE" 2>/dev/null || echo 0)
head -c $((TRACE_BYTES / 2)) "$TRACE" >"$WORK/half.fltrace" 2>/dev/null
expect "trace stats of a truncated trace" nonzero stderr "half.fltrace: truncated" -- \
  "$FAULTLINE" trace stats "$WORK/half.fltrace"
expect "sim of a truncated trace" nonzero stderr "half.fltrace: truncated" -- \
  "$FAULTLINE" sim --config "$WORK/run.json" --trace "$WORK/half.fltrace" --no-progress
printf 'not a trace\n' >"$WORK/plain.txt"
expect "trace dump of a file that is not a trace" nonzero stderr "plain.txt: corrupt compressed data" -- \
  "$FAULTLINE" trace dump "$WORK/plain.txt"

# --- things that must work ----------------------------------------------------------------------
expect "--help" 0 stdout "usage: faultline <command>" -- "$FAULTLINE" --help
expect "sim --help" 0 stdout "usage: faultline sim" -- "$FAULTLINE" sim --help
expect "synth --help" 0 stdout "usage: faultline synth" -- "$FAULTLINE" synth --help
expect "trace --help" 0 stdout "usage: faultline trace" -- "$FAULTLINE" trace --help
expect "trace stats prints the footprint" 0 stdout '"footprint_bytes": 67108864' -- \
  "$FAULTLINE" trace stats "$TRACE"
expect "trace dump runs" 0 stdout '"type":"kernel"' -- "$FAULTLINE" trace dump "$TRACE"
if head -n 1 "$WORK/out" | grep -q '"type":"header"'; then
  pass "trace dump starts with the header"
else
  fail "trace dump starts with the header" "$(head -c 300 "$WORK/out")"
fi

expect "sim runs" 0 any "" -- "$FAULTLINE" sim --config "$WORK/run.json" --trace "$TRACE" \
  --out "$WORK/result1.json" --no-progress
expect "sim runs again" 0 any "" -- "$FAULTLINE" sim --config "$WORK/run.json" --trace "$TRACE" \
  --out "$WORK/result2.json" --no-progress
if [[ -s $WORK/result1.json ]] && cmp -s "$WORK/result1.json" "$WORK/result2.json"; then
  pass "sim twice on the same inputs gives byte-identical results"
else
  fail "sim twice on the same inputs gives byte-identical results" \
    "$(diff "$WORK/result1.json" "$WORK/result2.json" 2>&1 | head -20)"
fi
expect "sim --iterations 0" 2 stderr "--iterations 0: expected 1 or more training steps" -- \
  "$FAULTLINE" sim --config "$WORK/run.json" --trace "$TRACE" --iterations 0 --no-progress
expect "sim --iterations runs" 0 any "" -- "$FAULTLINE" sim --config "$WORK/run.json" \
  --trace "$TRACE" --iterations 5 --out "$WORK/iter1.json" --no-progress
expect "sim --iterations runs again" 0 any "" -- "$FAULTLINE" sim --config "$WORK/run.json" \
  --trace "$TRACE" --iterations 5 --out "$WORK/iter2.json" --no-progress
expect "sim --iterations is deterministic and records the steps" 0 any "" -- \
  cmp "$WORK/iter1.json" "$WORK/iter2.json"
expect "sim --iterations writes a row per step" 0 any "" -- grep -q '"step": 4' "$WORK/iter1.json"
expect "trace stats counts steps" 0 stdout '"steps": ' -- "$FAULTLINE" trace stats "$TRACE"
if grep -q '"faults"' "$WORK/result1.json" && grep -q '"resolved_bytes"' "$WORK/result1.json"; then
  pass "sim results hold the measured values and the resolved capacity"
else
  fail "sim results hold the measured values and the resolved capacity" \
    "$(head -c 600 "$WORK/result1.json")"
fi

# faultline capture: misuse and bad inputs, without a GPU.
DATA=$SOURCE_DIR/tests/data/capture
expect "capture without --out" 2 stderr "--out is required" -- "$FAULTLINE" capture -- true
expect "capture without a command" 2 stderr "no command given" -- \
  "$FAULTLINE" capture --out "$WORK/c.fltrace"
expect "capture unknown option" 2 stderr "unknown option --bogus" -- \
  "$FAULTLINE" capture --bogus --out "$WORK/c.fltrace" -- true
expect "capture bad mode" 2 stderr "expected sanitize, cupti or observe" -- \
  "$FAULTLINE" capture --mode fast --out "$WORK/c.fltrace" -- true
expect "capture reserved meta key" 2 stderr "is the converter's own" -- \
  "$FAULTLINE" capture --meta steps=3 --out "$WORK/c.fltrace" -- true
expect "capture bad margin" 2 stderr "--margin: unknown unit \"X\"" -- \
  "$FAULTLINE" capture --margin 2X --out "$WORK/c.fltrace" -- true
expect "capture bad meta" 2 stderr "expected KEY=VALUE" -- \
  "$FAULTLINE" capture --meta novalue --out "$WORK/c.fltrace" -- true
expect "capture missing injection library" 2 stderr "does not exist" -- \
  "$FAULTLINE" capture --inject "$WORK/none.so" --out "$WORK/c.fltrace" -- true
expect "capture convert missing inputs" 2 stderr "--timing is required" -- \
  "$FAULTLINE" capture convert --out "$WORK/c.fltrace"
expect "capture convert missing raw stream" 1 stderr "cannot open raw stream" -- \
  "$FAULTLINE" capture convert --timing "$WORK/none.raw" --access "$DATA/strided-access.raw" \
  --out "$WORK/c.fltrace"
expect "capture convert missing program pass" 1 stderr "none-program.raw" -- \
  "$FAULTLINE" capture convert --timing "$DATA/strided-timing.raw" --access "$DATA/strided-access.raw" \
  --program "$WORK/none-program.raw" --out "$WORK/c.fltrace"
expect "capture convert timing pass as the program pass" 1 stderr "a timing pass, not of a program pass" -- \
  "$FAULTLINE" capture convert --timing "$DATA/strided-timing.raw" --access "$DATA/strided-access.raw" \
  --program "$DATA/stream-timing.raw" --out "$WORK/c.fltrace"
expect "capture convert mismatched passes" 1 stderr "allocations" -- \
  "$FAULTLINE" capture convert --timing "$DATA/strided-timing.raw" \
  --access "$DATA/stream-access.raw" --out "$WORK/c.fltrace"
expect "capture convert" 0 any "" -- \
  "$FAULTLINE" capture convert --timing "$DATA/strided-timing.raw" \
  --access "$DATA/strided-access.raw" --meta workload=strided --out "$WORK/c.fltrace"
expect "converted trace reads back" 0 stdout '"kernels": 6' -- "$FAULTLINE" trace stats "$WORK/c.fltrace"
# Every --meta reaches the header, not only the first.
"$FAULTLINE" capture convert --timing "$DATA/strided-timing.raw" --access "$DATA/strided-access.raw" \
  --meta workload=strided --meta batch=8 --out "$WORK/m.fltrace" >/dev/null 2>&1
expect "capture convert keeps every --meta" 0 stdout '"batch":8' -- "$FAULTLINE" trace dump "$WORK/m.fltrace"

# faultline sweep: misuse.
expect "sweep without a file" 2 stderr "usage: faultline sweep" -- "$FAULTLINE" sweep
expect "sweep missing file" 1 stderr "none.json" -- "$FAULTLINE" sweep "$WORK/none.json"
expect "sweep bad jobs" 2 stderr "--jobs" -- "$FAULTLINE" sweep "$WORK/none.json" --jobs many
# Shards and the merge (a Slurm job array's two steps).
cat >"$WORK/shards.json" <<JSON
{"name": "shards", "base": "$WORK/run.json",
 "traces": ["$TRACE"], "policies": ["ondemand"],
 "capacity_fractions": [1.0, 0.5], "out": "$WORK/shards"}
JSON
expect "sweep shard past the last" 2 stderr "shard 3 of 3 does not exist" -- \
  "$FAULTLINE" sweep "$WORK/shards.json" --shard 3/3
expect "sweep shard not a number" 2 stderr "--shard: expected a whole number, got \"x\"" -- \
  "$FAULTLINE" sweep "$WORK/shards.json" --shard x/2
expect "sweep shard without N" 2 stderr "expected I/N" -- "$FAULTLINE" sweep "$WORK/shards.json" --shard 1
expect "sweep merge before the shards" 1 stderr "2 of 2 points missing" -- \
  "$FAULTLINE" sweep "$WORK/shards.json" --merge
expect "sweep shard" 0 stderr "shard 0/2, 2 points (1 run" -- \
  "$FAULTLINE" sweep "$WORK/shards.json" --shard 0/2
expect "sweep merge with a point missing" 1 stderr "1 of 2 points missing" -- \
  "$FAULTLINE" sweep "$WORK/shards.json" --merge
expect "sweep shard from a Slurm array" 0 stderr "shard 1/2" -- \
  env SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=2 \
  "$FAULTLINE" sweep "$WORK/shards.json"
expect "sweep bad Slurm task id" 2 stderr "SLURM_ARRAY_TASK_ID" -- \
  env SLURM_ARRAY_TASK_ID=one SLURM_ARRAY_TASK_COUNT=2 "$FAULTLINE" sweep "$WORK/shards.json"
expect "sweep merge and shard" 2 stderr "--merge takes no --shard" -- \
  "$FAULTLINE" sweep "$WORK/shards.json" --merge --shard 0/2
expect "sweep merge" 0 stderr "2 points merged" -- "$FAULTLINE" sweep "$WORK/shards.json" --merge

# faultline calibrate and replay: misuse caught before any GPU is needed.
expect "calibrate without a name" 2 stderr "--name is required" -- "$FAULTLINE" calibrate
expect "calibrate unknown option" 2 stderr "unknown option --fast" -- \
  "$FAULTLINE" calibrate --name x --fast
expect "calibrate refit missing file" 1 stderr "no such calibration file" -- \
  "$FAULTLINE" calibrate --refit "$WORK/none.json"
echo '{"name": "x"}' > "$WORK/not-calibration.json"
expect "calibrate refit not a calibration" 1 stderr "expected a calibration document" -- \
  "$FAULTLINE" calibrate --refit "$WORK/not-calibration.json" --out-dir "$WORK/cal"
expect "calibrate no moments" 2 stderr "--moments 0: expected 1 to 8" -- \
  "$FAULTLINE" calibrate --name x --from h100 --moments 0
expect "calibrate moments on a refit" 2 stderr "--refit excludes --moments" -- \
  "$FAULTLINE" calibrate --refit "$WORK/none.json" --moments 2
expect "calibrate combine-by alone" 2 stderr "--combine-by requires --combine" -- \
  "$FAULTLINE" calibrate --refit "$WORK/none.json" --combine-by fastest
expect "calibrate combine-by unknown" 2 stderr "slowest not in {median,fastest}" -- \
  "$FAULTLINE" calibrate --refit "$WORK/none.json" --combine "$WORK/none.json" --combine-by slowest
expect "calibrate per machine and quick" 2 stderr "--quick excludes --from" -- \
  "$FAULTLINE" calibrate --name x --from h100 --quick
expect "calibrate per machine from an unknown profile" 1 stderr 'unknown gpus profile "h999"; known: ' -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/configs/calibration/h100.json" --from h999 --out-dir "$WORK/cal"
expect "calibrate per machine from a per-machine calibration with an unknown fault path" 1 stderr "h999" -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/experiments/live/data/h100-a069ff39/profile/calibration/h100-a069ff39.json" --from h999 --out-dir "$WORK/cal"
expect "calibrate pool without refit" 2 stderr "--pool requires --refit" -- \
  "$FAULTLINE" calibrate --name x --pool "$SOURCE_DIR/configs/calibration/h100.json"
expect "calibrate pool of a missing file" 1 stderr "no such calibration file" -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/configs/calibration/h100.json" --pool "$WORK/none.json" --out-dir "$WORK/cal"
expect "calibrate combine without refit" 2 stderr "--combine requires --refit" -- \
  "$FAULTLINE" calibrate --name x --combine "$SOURCE_DIR/configs/calibration/h100.json"
expect "calibrate combine of two GPU models" 1 stderr "combine calibrations of one instance made the same way" -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/configs/calibration/h100.json" --combine "$SOURCE_DIR/configs/calibration/h200.json" --out-dir "$WORK/cal"
expect "calibrate combine of a missing file" 1 stderr "no such calibration file" -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/configs/calibration/h100.json" --combine "$WORK/none.json" --out-dir "$WORK/cal"
expect "calibrate eviction price without refit" 2 stderr "--eviction-ns requires --refit" -- \
  "$FAULTLINE" calibrate --name x --eviction-ns 200000
expect "calibrate eviction price of 0" 2 stderr "--eviction-ns 0: expected the ns a 2 MB chunk's eviction costs" -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/configs/calibration/h100.json" --eviction-ns 0 --out-dir "$WORK/cal"
expect "calibrate negative eviction price" 2 stderr '--eviction-ns: expected a number, got "-5"' -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/configs/calibration/h100.json" --eviction-ns -5 --out-dir "$WORK/cal"
expect "calibrate eviction price in K" 2 stderr "--eviction-ns 200K: expected" -- \
  "$FAULTLINE" calibrate --refit "$SOURCE_DIR/configs/calibration/h100.json" --eviction-ns 200K --out-dir "$WORK/cal"
expect "calibrate bad repeats" 2 stderr "expected a number" -- \
  "$FAULTLINE" calibrate --name x --repeats -3
expect "replay margin too large" 2 stderr "too large" -- \
  "$FAULTLINE" replay --trace "$WORK/none.fltrace" --margin 99999999999999G
expect "replay fractional bytes" 2 stderr "unknown unit" -- \
  "$FAULTLINE" replay --trace "$WORK/none.fltrace" --budget 1.5G
expect "replay unknown fault source" 2 stderr "expected books or cupti" -- \
  "$FAULTLINE" replay --trace "$WORK/none.fltrace" --faults driver
expect "replay drains without cupti" 2 stderr "only with --faults cupti" -- \
  "$FAULTLINE" replay --trace "$WORK/none.fltrace" --drain-every 4
expect "replay drains every 0" 2 stderr "expected 1 or more" -- \
  "$FAULTLINE" replay --trace "$WORK/none.fltrace" --faults cupti --drain-every 0
printf '{"gpu": "testgpu", "gpus": 2, "capacity": {"fraction_of_footprint": 0.5}, "policy": {"name": "ondemand"}}' >"$WORK/two-gpus.json"
expect "replay config of several GPUs" 2 stderr "runs one trace on one GPU" -- \
  "$FAULTLINE" replay --config "$WORK/two-gpus.json" --trace "$WORK/none.fltrace"
expect "replay config with an unknown policy" 1 stderr 'unknown policy "nope"' -- \
  "$FAULTLINE" replay --config "$WORK/unknown-policy.json" --trace "$WORK/none.fltrace"
expect "replay config with an unknown key" 1 stderr "polcy" -- \
  "$FAULTLINE" replay --config "$WORK/unknown-key.json" --trace "$WORK/none.fltrace"
expect "replay config that is missing" 1 stderr "nowhere.json" -- \
  "$FAULTLINE" replay --config "$WORK/nowhere.json" --trace "$WORK/none.fltrace"

# faultline run: misuse caught before the program starts; a program with no CUDA work named.
expect "run without a program" 2 stderr "no program given after --" -- "$FAULTLINE" run --policy pump
expect "run of an unknown policy" 2 stderr "--policy nope: unknown policy; known policies:" -- \
  "$FAULTLINE" run --policy nope -- /bin/true
expect "run with params the policy does not take" 2 stderr "--params: \$.policy.params.x: unknown key" -- \
  "$FAULTLINE" run --policy pump --params '{"x": 1}' -- /bin/true
expect "run with params not an object" 2 stderr "expected a JSON object" -- \
  "$FAULTLINE" run --params '[1]' -- /bin/true
expect "run with a fraction and no footprint" 2 stderr "a fraction needs the program's footprint" -- \
  "$FAULTLINE" run --budget 50% -- /bin/true
expect "run with a missing trace" 2 stderr "--trace $WORK/none.fltrace: no such file" -- \
  "$FAULTLINE" run --budget 50% --trace "$WORK/none.fltrace" -- /bin/true
expect "run with a bad range" 2 stderr "--range x: expected all or profiler" -- \
  "$FAULTLINE" run --range x -- /bin/true
expect "run with a bad kernel-ends" 2 stderr "--kernel-ends cpu: expected launch or gpu" -- \
  "$FAULTLINE" run --kernel-ends cpu -- /bin/true
expect "run with counters but no rows" 2 stderr "--um-counters: only with --per-kernel" -- \
  "$FAULTLINE" run --um-counters -- /bin/true
expect "run with a bad budget" 2 stderr "--budget" -- "$FAULTLINE" run --budget 0 -- /bin/true
if [[ -f $(dirname "$FAULTLINE")/libfaultline_inject.so ]]; then
  expect "run of a program with no CUDA work" 1 stderr "/bin/true made no CUDA call" -- \
    "$FAULTLINE" run --budget 1G -- /bin/true
  expect "run passes the program's exit status" 3 stderr "" -- \
    "$FAULTLINE" run -- /bin/sh -c "exit 3"
else
  expect "run without the injection library" 2 stderr "libfaultline_inject.so does not exist" -- \
    "$FAULTLINE" run --budget 1G -- /bin/true
fi

# faultline results fields: the table sim/README.md holds is the declared one.
sed -n '/<!-- result-fields:begin -->/,/<!-- result-fields:end -->/p' "$SOURCE_DIR/sim/README.md" |
  sed '1d;$d' >"$WORK/fields-readme.md"
expect "results fields match sim/README.md" 0 stdout "" -- \
  diff "$WORK/fields-readme.md" <("$FAULTLINE" results fields)
expect "results without fields" 2 stderr "usage: faultline results fields" -- "$FAULTLINE" results

# faultline bound: a lower bound, one job on one GPU.
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["gpus"]=2; print(json.dumps(c))' \
  "$WORK/run.json" >"$WORK/two-gpus.json"
expect "bound without a trace" 2 stderr "--trace is required" -- \
  "$FAULTLINE" bound --config "$WORK/run.json"
expect "bound of a two-GPU config" 1 stderr "one job on one GPU" -- \
  "$FAULTLINE" bound --config "$WORK/two-gpus.json" --trace "$SOURCE_DIR/traces/real/stream.fltrace"
expect "bound of a trace" 0 stdout '"lower_bound_ns"' -- \
  "$FAULTLINE" bound --config "$WORK/run.json" --trace "$SOURCE_DIR/traces/real/stream.fltrace"
expect "bound of measured steps" 0 stdout '"first_step": 1' -- \
  "$FAULTLINE" bound --config "$WORK/run.json" --trace "$SOURCE_DIR/traces/real/stream.fltrace" --steps 1:2
expect "bound with a bad step range" 2 stderr "--steps 2:1: LAST comes before FIRST" -- \
  "$FAULTLINE" bound --config "$WORK/run.json" --trace "$SOURCE_DIR/traces/real/stream.fltrace" --steps 2:1
expect "bound with steps not a range" 2 stderr "--steps one: expected FIRST:LAST" -- \
  "$FAULTLINE" bound --config "$WORK/run.json" --trace "$SOURCE_DIR/traces/real/stream.fltrace" --steps one

# faultline config schema: every declared config key (the READMEs' tables: tests/doc_tables.sh).
expect "config schema of a section" 0 stdout '| `batch_size` | unsigned 32-bit integer | `256` | at least 1 |' -- \
  "$FAULTLINE" config schema run.driver
expect "config schema as JSON" 0 stdout '"section": "policy.deepum"' -- \
  "$FAULTLINE" config schema --format json policy.deepum
expect "config schema of an unknown section" 2 stderr 'unknown config section "nope"; known: alloc' -- \
  "$FAULTLINE" config schema nope
expect "config schema with an unknown format" 2 stderr "expected markdown or json" -- \
  "$FAULTLINE" config schema --format html
expect "config without schema" 2 stderr "usage: faultline config schema" -- "$FAULTLINE" config

# faultline alloc: allocation histories and allocator models.
SNAP=$SOURCE_DIR/tests/data/alloc/snapshot.pickle
expect "alloc without a subcommand" 2 stderr "usage: faultline alloc" -- "$FAULTLINE" alloc
expect "alloc unknown subcommand" 2 stderr 'unknown alloc command "frob"' -- "$FAULTLINE" alloc frob
expect "alloc run without --history" 2 stderr "--history is required" -- "$FAULTLINE" alloc run
expect "alloc run missing history" 1 stderr "$WORK/none.pickle" -- \
  "$FAULTLINE" alloc run --history "$WORK/none.pickle"
expect "alloc run unknown allocator" 1 stderr "unknown allocator 'tlsf'; known allocators: caching, expandable, gmlake" -- \
  "$FAULTLINE" alloc run --history "$SNAP" --allocators caching,tlsf
head -c 100 "$SNAP" > "$WORK/cut.pickle"
expect "alloc run truncated snapshot" 1 stderr "$WORK/cut.pickle: byte" -- \
  "$FAULTLINE" alloc run --history "$WORK/cut.pickle"
echo '{"allocators": ["caching"], "options": {"gmlake_frag_limt": 1}}' > "$WORK/alloc-typo.json"
expect "alloc config key typo" 1 stderr "\$.options.gmlake_frag_limt: unknown key" -- \
  "$FAULTLINE" alloc run --history "$SNAP" --config "$WORK/alloc-typo.json"
expect "alloc relayout without --out" 2 stderr "--out is required" -- \
  "$FAULTLINE" alloc relayout --trace "$WORK/c.fltrace" --allocator gmlake
"$FAULTLINE" alloc run --history "$SNAP" --out "$WORK/alloc1.json" 2>/dev/null
"$FAULTLINE" alloc run --history "$SNAP" --out "$WORK/alloc2.json" 2>/dev/null
expect "alloc run is deterministic" 0 any "" -- cmp "$WORK/alloc1.json" "$WORK/alloc2.json"

echo "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
