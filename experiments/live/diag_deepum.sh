#!/usr/bin/env bash
# Issue 21 diagnosis: where live DeepUM's time goes on multi-step traces (2x the simulator's on
# the DNN traces of h200-99f28b56). One trace at one budget with per-kernel rows, under ondemand,
# DeepUM, and DeepUM with each of its three mechanisms off.
#   experiments/live/diag_deepum.sh OUT_DIR [TRACE] [BUDGET]
set -u
out=${1:?usage: diag_deepum.sh OUT_DIR [TRACE] [BUDGET]}
trace=${2:-resnet50} budget=${3:-0.75}
bin=$PWD/.dev
mkdir -p "$out/configs"
variant() { # NAME POLICY PARAMS_JSON
  printf '{"capacity": {"fraction_of_footprint": %s, "mode": "budget"}, "policy": {"name": "%s", "params": %s}}\n' \
    "$budget" "$2" "$3" >"$out/configs/$1.json"
  if timeout 300 "$bin/faultline" replay --trace "traces/real/$trace.fltrace" --config "$out/configs/$1.json" \
    --per-kernel --out "$out/$trace-$1-$budget.json" 2>"$out/$1.err"; then
    rm -f "$out/$1.err"; echo "$1 done"
  else echo "$1 failed: $(tail -1 "$out/$1.err")"; fi
}
variant ondemand ondemand '{}'
variant deepum deepum '{}'
variant deepum-no-discard deepum '{"discard_freed": false}'
variant deepum-no-pre-evict deepum '{"pre_evict": false}'
variant deepum-no-prefetch deepum '{"prefetch": false}'
