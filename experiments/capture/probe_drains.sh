#!/usr/bin/env bash
# How often must the access pass drain CUPTI's unified-memory queue? Captures the same programs
# with each setting MiB:K (FAULTLINE_DRAIN_BYTES of that many MiB, FAULTLINE_DRAIN_EVERY=K) and
# checks every access set against a reference: the stream microbenchmark against the access sets
# um_micro states, GPT-2 small against the shipped trace (captured draining three times per
# operation). Then it times the drains of a small program with each cuptiActivityFlushAll flag.
#   experiments/capture/probe_drains.sh OUT_DIR MiB:K...
# Needs build-gpu/ as capture_all.sh does. Prints one line per capture: setting, wall time,
# drains, and whether the access sets agree.
set -euo pipefail
out=${1:?usage: probe_drains.sh OUT_DIR MiB:K...}
shift
mkdir -p "$out"
bin=$PWD/build-gpu
here=$(dirname "$0")

capture() { # NAME MiB:K FLUSH COMMAND...: capture with that draining, print the summary line
  local name=$1 setting=$2 flush=$3 began ended
  local file=$out/$name-${setting/:/-}-$flush
  shift 3
  began=$(date +%s.%N)
  FAULTLINE_DRAIN_BYTES=$((${setting%:*} << 20)) FAULTLINE_DRAIN_EVERY=${setting#*:} \
    FAULTLINE_FLUSH=$flush "$bin/faultline" capture --out "$file.fltrace" "$@" >"$file.log" 2>&1 ||
    { echo "$name $setting failed:"; tail -5 "$file.log"; return 1; }
  ended=$(date +%s.%N)
  local draining
  draining=$("$bin/faultline" trace dump "$file.fltrace" | head -1 |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["metadata"]["capture"]["access_pass_draining"]))') || true
  awk -v n="$name" -v k="$setting" -v f="$flush" -v a="$began" -v b="$ended" -v d="$draining" \
    'BEGIN { printf "%s %s flush=%s %.1f s %s\n", n, k, f, b - a, d }'
}

for s in "$@"; do
  capture stream "$s" normal -- "$bin/um_micro" stream --mib 2048 --iterations 2 \
    --expect "$out/stream.expect.json"
  python3 "$here/check_micro.py" "$bin/faultline" "$out/stream-${s/:/-}-normal.fltrace" \
    "$out/stream.expect.json" | grep -c DIFFERENT | sed 's/^/stream operations differing: /' || true
  capture gpt2-small "$s" normal --torch --range profiler -- \
    python3 "$here/workloads.py" gpt2-small --warmup 1 --steps 1 --batch 8
  python3 "$here/compare_access.py" "$bin/faultline" traces/real/gpt2-small.fltrace \
    "$out/gpt2-small-${s/:/-}-normal.fltrace" | tail -4 || true
done
for flush in ${FLUSHES:-}; do
  capture mlp 64:1 "$flush" --torch --range profiler -- \
    python3 "$here/workloads.py" mlp --batch 256 --warmup 1 --steps 20
done
