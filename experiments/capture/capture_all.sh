#!/usr/bin/env bash
# Captures the shipped real traces on a GPU machine and measures the tracer's overhead.
#   experiments/capture/capture_all.sh OUT_DIR WORKLOAD...
# WORKLOAD: stream, strided (microbenchmarks with declared access sets), stencil (a solver whose
# data the host initialises), pagerank, resnet50, gpt2-small, gpt2-medium, bert-large, t5-base,
# moe, graphsage; and the hold-out programs of experiments/live/holdout/: hash-join, transpose2d,
# llama, and the second set radix-sort, cg, unet. Needs .dev/ from
# experiments/capture/stage_device.sh. For each workload it
# runs, as MODES says (default "plain capture"):
#   plain    the program alone
#   capture  faultline capture (timing pass + sanitize pass) -> OUT_DIR/NAME.fltrace
#   cupti    faultline capture --mode cupti (timing pass + the older evict-and-drain pass)
#   observe  faultline capture --mode observe -> OUT_DIR/NAME.observe.json
# and appends one line per run to OUT_DIR/NAME.runs.jsonl: mode, wall seconds, program output.
# experiments/capture/overhead.py turns the runs into capture/reports/overhead.json (make_reports.sh).
set -euo pipefail
out=${1:?usage: capture_all.sh OUT_DIR WORKLOAD...}
shift
mkdir -p "$out"
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
here=$(dirname "$0")
steps=3

# name -> command, capture options and trace metadata
declare -A cmd opts meta
cmd[stream]="$bin/um_micro stream --mib 2048 --iterations $steps --expect $out/stream.expect.json"
cmd[strided]="$bin/um_micro strided --mib 4096 --stride-kib 192 --iterations $steps --expect $out/strided.expect.json"
cmd[stencil]="$bin/host_stencil --mib 3072 --steps $steps --sweeps 6"
cmd[hash-join]="$bin/hash_join --mib 3072 --steps $steps"
cmd[transpose2d]="$bin/transpose2d --mib 2048 --steps $steps"
cmd[radix-sort]="$bin/radix_sort --mib 2048 --steps $steps"
cmd[cg]="$bin/cg --mib 2048 --steps $steps --iterations 3"
cmd[bfs]="$bin/bfs --mib 2048 --steps $steps"
opts[stream]=""; opts[strided]=""; opts[stencil]="--range profiler"
opts[hash-join]="--range profiler"; opts[transpose2d]="--range profiler"
opts[radix-sort]="--range profiler"; opts[cg]="--range profiler"; opts[bfs]="--range profiler"
meta[stream]="--meta workload=stream"
meta[strided]="--meta workload=strided --meta stride_bytes=196608"
meta[stencil]="--meta workload=host-stencil --meta sweeps=6"
meta[hash-join]="--meta workload=hash-join"; meta[transpose2d]="--meta workload=transpose2d"
meta[radix-sort]="--meta workload=radix-sort"; meta[cg]="--meta workload=cg --meta iterations=3"
meta[bfs]="--meta workload=bfs --meta degree=16"
declare -A batch=([pagerank]=16 [resnet50]=64 [gpt2-small]=8 [gpt2-medium]=4 [bert-large]=8
                  [t5-base]=8 [moe]=16 [graphsage]=10 [llama]=4 [unet]=8 [vit]=32 [lstm]=64)
for w in "${!batch[@]}"; do
  cmd[$w]="python3 $here/workloads.py $w --warmup 1 --steps $steps --batch ${batch[$w]}"
  opts[$w]="--torch --range profiler"
  meta[$w]="--meta workload=$w --meta batch=${batch[$w]}"
done
meta[pagerank]+=" --meta vertices=16000000 --meta edges=256000000"
meta[resnet50]+=" --meta image=224"
for w in gpt2-small gpt2-medium; do meta[$w]+=" --meta sequence=1024"; done
meta[bert-large]+=" --meta sequence=512"
meta[t5-base]+=" --meta source=512 --meta target=128"
meta[moe]+=" --meta sequence=512 --meta experts=8 --meta top_k=2"
meta[llama]+=" --meta sequence=1024 --meta layers=16"
meta[unet]+=" --meta image=256 --meta width=64 --meta depth=4"
meta[vit]+=" --meta image=224 --meta patch=16 --meta width=768 --meta depth=12"
meta[lstm]+=" --meta sequence=256 --meta hidden=2048 --meta layers=2"
meta[graphsage]+=" --meta vertices=1000000 --meta edges=16000000"

run() { # NAME MODE COMMAND...: runs it, appends {mode, seconds, output} to NAME.runs.jsonl
  local name=$1 mode=$2 began ended log
  shift 2
  log=$(mktemp)
  began=$(date +%s.%N)
  if ! "$@" >"$log" 2>&1; then
    echo "$name $mode failed:"; tail -20 "$log"; return 1
  fi
  ended=$(date +%s.%N)
  python3 - "$name" "$mode" "$began" "$ended" "$log" "$steps" >>"$out/$name.runs.jsonl" <<'PY'
import json, sys
name, mode, began, ended, log, steps = sys.argv[1:]
lines = open(log, errors="replace").read().splitlines()
program = [json.loads(l) for l in lines if l.startswith("{\"workload\"")]
print(json.dumps({"workload": name, "mode": mode, "seconds": round(float(ended) - float(began), 2),
                  "steps": int(steps), "program": program[0] if program else None,
                  "tail": lines[-3:]}))
PY
  echo "$name $mode $(tail -1 "$out/$name.runs.jsonl" | cut -c1-200)"
}

modes=${MODES:-plain capture}
has() { [[ " $modes " == *" $1 "* ]]; }
for w in "$@"; do
  read -r -a c <<<"${cmd[$w]}"
  read -r -a o <<<"${opts[$w]}"
  read -r -a m <<<"${meta[$w]} --meta measured_steps=$steps"
  # A workload that fails is reported and the others go on.
  if has plain; then run "$w" plain "${c[@]}" || continue; fi
  if has capture; then
    run "$w" capture "$bin/faultline" capture "${o[@]}" "${m[@]}" --out "$out/$w.fltrace" \
      -- "${c[@]}" || continue
    "$bin/faultline" trace stats "$out/$w.fltrace" >"$out/$w.stats.json"
  fi
  if has cupti; then
    run "$w" cupti "$bin/faultline" capture --mode cupti "${o[@]}" "${m[@]}" \
      --out "$out/$w.cupti.fltrace" -- "${c[@]}" || continue
  fi
  if has observe; then
    run "$w" observe "$bin/faultline" capture --mode observe "${o[@]}" "${m[@]}" \
      --out "$out/$w.observe.json" -- "${c[@]}" || continue
  fi
done
