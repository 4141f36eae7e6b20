#!/usr/bin/env bash
# Captures the shipped real traces on a GPU machine and measures the tracer's overhead.
#   experiments/capture/capture_all.sh OUT_DIR WORKLOAD...
# WORKLOAD: stream, strided (microbenchmarks), gpt2-small, gpt2-medium, resnet50, bert-large, pagerank.
# Needs build-gpu/ with libfaultline_inject.so, um_micro and faultline (see traces/README.md).
# For each workload it runs the program plain, with managed memory only, under the tracer in
# observe mode, and under `faultline capture` (timing + access passes), and writes
#   OUT_DIR/NAME.fltrace          the trace
#   OUT_DIR/NAME.observe.json     observe-mode summary
#   OUT_DIR/NAME.runs.jsonl       one line per run: mode, wall seconds, program output
set -euo pipefail
out=${1:?usage: capture_all.sh OUT_DIR WORKLOAD...}
shift
mkdir -p "$out"
bin=$PWD/build-gpu
lib=$bin/libfaultline_inject.so
here=$(dirname "$0")

# name -> command, capture options and trace metadata
declare -A cmd opts meta
cmd[stream]="$bin/um_micro stream --mib 2048 --iterations 2 --expect $out/stream.expect.json"
cmd[strided]="$bin/um_micro strided --mib 4096 --stride-kib 192 --iterations 2 --expect $out/strided.expect.json"
opts[stream]="" ; opts[strided]=""
meta[stream]='--meta workload=stream --meta iterations=2'
meta[strided]='--meta workload=strided --meta iterations=2 --meta stride_bytes=196608'
for w in gpt2-medium resnet50 bert-large pagerank; do
  cmd[$w]="python3 $here/workloads.py $w --warmup 1 --steps 2"
  opts[$w]="--torch --range profiler"
  meta[$w]="--meta workload=$w --meta iterations=2"
done
# The two transformers run one measured step: an access pass costs about 0.1 s per operation
# and each step has about 2500 operations.
cmd[gpt2-medium]="python3 $here/workloads.py gpt2-medium --warmup 1 --steps 1 --batch 4"
meta[gpt2-medium]="--meta workload=gpt2-medium --meta iterations=1 --meta batch=4 --meta sequence=1024"
cmd[gpt2-small]="python3 $here/workloads.py gpt2-small --warmup 1 --steps 1 --batch 8"
meta[gpt2-small]="--meta workload=gpt2-small --meta iterations=1 --meta batch=8 --meta sequence=1024"
opts[gpt2-small]="--torch --range profiler"
cmd[bert-large]="python3 $here/workloads.py bert-large --warmup 1 --steps 1 --batch 8"
meta[bert-large]="--meta workload=bert-large --meta iterations=1 --meta batch=8 --meta sequence=512"
cmd[resnet50]+=" --batch 64"; meta[resnet50]+=" --meta batch=64 --meta image=224"
cmd[pagerank]+=" --batch 16"; meta[pagerank]+=" --meta vertices=16000000 --meta edges=256000000"

run() { # NAME MODE COMMAND...: runs it, appends {mode, seconds, output} to NAME.runs.jsonl
  local name=$1 mode=$2 began ended log
  shift 2
  log=$(mktemp)
  began=$(date +%s.%N)
  if ! "$@" >"$log" 2>&1; then
    echo "$name $mode failed:"; tail -20 "$log"; return 1
  fi
  ended=$(date +%s.%N)
  python3 - "$name" "$mode" "$began" "$ended" "$log" >>"$out/$name.runs.jsonl" <<'PY'
import json, sys
name, mode, began, ended, log = sys.argv[1:]
lines = open(log, errors="replace").read().splitlines()
program = [json.loads(l) for l in lines if l.startswith("{\"workload\"")]
print(json.dumps({"workload": name, "mode": mode, "seconds": round(float(ended) - float(began), 2),
                  "program": program[0] if program else None, "tail": lines[-3:]}))
PY
  echo "$name $mode $(tail -1 "$out/$name.runs.jsonl" | cut -c1-160)"
}

modes=${MODES:-plain managed observe access-set} # MODES=access-set reruns the capture alone
has() { [[ " $modes " == *" $1 "* ]]; }
for w in "$@"; do
  read -r -a c <<<"${cmd[$w]}"
  read -r -a o <<<"${opts[$w]}"
  read -r -a m <<<"${meta[$w]}"
  if has plain; then run "$w" plain "${c[@]}"; fi
  if has managed && [[ " ${o[*]} " == *" --torch "* ]]; then
    run "$w" managed env LD_PRELOAD="$lib" FAULTLINE_MANAGED=1 "${c[@]}"
  fi
  if has observe; then
    run "$w" observe "$bin/faultline" capture --mode observe "${o[@]}" "${m[@]}" \
      --out "$out/$w.observe.json" -- "${c[@]}"
  fi
  if has access-set; then
    run "$w" access-set "$bin/faultline" capture "${o[@]}" "${m[@]}" \
      --out "$out/$w.fltrace" -- "${c[@]}"
    "$bin/faultline" trace stats "$out/$w.fltrace" >"$out/$w.stats.json"
  fi
done
