#!/usr/bin/env bash
# What the capture's timing pass adds to a program's own step time, part by part.
#   experiments/capture/probe_timing.sh OUT_DIR WORKLOAD...   (on the GPU machine, after stage_device.sh)
# For each PyTorch workload of workloads.py it runs, one after the other: the program alone; the
# program with its cudaMalloc made managed (the library preloaded, no CUPTI); the timing pass with
# CUPTI's unified-memory counters ("timing": callbacks, activity, the counters, PyTorch's
# allocator history, step marks); and the timing pass without the counters ("timing-no-um": the
# pass as `faultline capture` runs it), without the allocator history, and without both. Each run appends
# {"workload", "variant", "step_seconds", "meta"} to OUT_DIR/timing-probe.jsonl: the program's own
# step times and what the injection library reported (its per-launch callback cost).
# VARIANTS picks and orders the variants (default: all of them, once; "history" is PyTorch's
# allocator history on managed memory, no CUPTI; "activity" and "callbacks" the timing pass
# without history or counters, with only CUPTI's activity records or only its API callbacks;
# "no-launches", "driver-launches", "no-flush-period", "no-sync-activity" the same pass without
# its launch callbacks, without the runtime's launch callbacks, without CUPTI's periodic flush,
# without CUPTI's synchronisation records; a comma-separated list of these leaves out all of
# them; "program" is the capture's program pass, CUPTI's activity records alone on the program's
# own memory, "program-no-driver-api" the same without the driver calls' records), REPEATS runs
# the list that many times
# (interleaved, so a machine's drift touches every variant alike), STEPS the measured steps.
set -euo pipefail
out=${1:?usage: probe_timing.sh OUT_DIR WORKLOAD...}
shift
mkdir -p "$out"
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
here=$(dirname "$0")
steps=${STEPS:-3}
variants=${VARIANTS:-plain managed timing timing-no-um timing-no-history timing-no-um-no-history}
declare -A batch=([resnet50]=64 [gpt2-small]=8 [gpt2-medium]=4 [bert-large]=8 [t5-base]=8
                  [moe]=16 [graphsage]=10 [pagerank]=16 [llama]=4 [vit]=32)

run() { # WORKLOAD VARIANT ENV...: runs the workload under the environment, appends one line
  local w=$1 variant=$2 raw=$out/$1-$2.raw log
  shift 2
  log=$(mktemp)
  env "$@" FAULTLINE_RAW_OUT="$raw" python3 "$here/workloads.py" "$w" --warmup 1 --steps "$steps" \
    --batch "${batch[$w]}" >"$log" 2>&1 || { echo "$w $variant failed"; tail -5 "$log"; return 0; }
  python3 - "$w" "$variant" "$log" "$raw" >>"$out/timing-probe.jsonl" <<'PY'
import json, os, struct, sys
w, variant, log, raw = sys.argv[1:]
program = [json.loads(l) for l in open(log) if l.startswith("{\"workload\"")]
meta = {}
if os.path.exists(raw):
    data = open(raw, "rb").read()
    at = 16
    while at + 8 <= len(data):
        kind, _, size = struct.unpack_from("<HHI", data, at)
        if kind == 1:
            try: meta.update(json.loads(data[at + 8:at + 8 + size].decode()))
            except ValueError: pass
        at += 8 + size
    os.remove(raw)
print(json.dumps({"workload": w, "variant": variant,
                  "step_seconds": program[0]["step_seconds"] if program else None,
                  "meta": {k: v for k, v in meta.items() if k.startswith(("timing_", "host_touch"))}}))
PY
  echo "$w $variant $(tail -1 "$out/timing-probe.jsonl" | cut -c1-220)"
}

for w in "$@"; do
  timing=(CUDA_INJECTION64_PATH="$bin/libfaultline_inject.so" FAULTLINE_MODE=timing
          FAULTLINE_RANGE=profiler FAULTLINE_INJECT_LIB="$bin/libfaultline_inject.so"
          FAULTLINE_MANAGED=1 LD_PRELOAD="$bin/libfaultline_inject.so"
          PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}")
  history=(FAULTLINE_TORCH_HISTORY="$out/$w.history.json")
  for _ in $(seq "${REPEATS:-1}"); do
    for v in $variants; do
      case $v in
        plain) run "$w" plain A=1 ;;
        managed) run "$w" managed FAULTLINE_MANAGED=1 LD_PRELOAD="$bin/libfaultline_inject.so" ;;
        history) run "$w" history "${history[@]}" FAULTLINE_MANAGED=1 \
          LD_PRELOAD="$bin/libfaultline_inject.so" PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}" ;;
        timing) run "$w" timing "${timing[@]}" "${history[@]}" ;;
        timing-no-um) run "$w" timing-no-um "${timing[@]}" "${history[@]}" FAULTLINE_UM_COUNTERS=0 ;;
        timing-no-history) run "$w" timing-no-history "${timing[@]}" ;;
        timing-no-um-no-history) run "$w" timing-no-um-no-history "${timing[@]}" FAULTLINE_UM_COUNTERS=0 ;;
        program) run "$w" program CUDA_INJECTION64_PATH="$bin/libfaultline_inject.so" FAULTLINE_MODE=program \
          FAULTLINE_INJECT_LIB="$bin/libfaultline_inject.so" PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}" ;;
        program-no-driver-api) run "$w" "$v" CUDA_INJECTION64_PATH="$bin/libfaultline_inject.so" FAULTLINE_MODE=program \
          FAULTLINE_PROBE=no-driver-api FAULTLINE_INJECT_LIB="$bin/libfaultline_inject.so" PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}" ;;
        activity|callbacks|no-launches|driver-launches|no-flush-period|no-sync-activity|*,*) run "$w" "$v" "${timing[@]}" FAULTLINE_UM_COUNTERS=0 FAULTLINE_PROBE="$v" ;;
        *) echo "unknown variant $v"; exit 2 ;;
      esac
    done
  done
  rm -f "$out/$w.history.json"
done
