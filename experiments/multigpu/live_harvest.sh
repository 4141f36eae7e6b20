#!/usr/bin/env bash
# HUVM's setup live on a two-GPU machine (nvidia-h200-x2): the harvester replays a trace on GPU 0
# under a residency budget while a neighbour job (a second trace, wholly resident) replays in a
# loop on GPU 1, whose spare memory the harvester may use up to --peer-budget. Four variants:
#   host       ondemand: the driver's FIFO budget eviction to the host
#   preevict   harvest, victims to the host, no look-ahead prefetch
#   peer       harvest, victims to GPU 1, no look-ahead prefetch
#   harvest    harvest with everything (victims to GPU 1, multi-path prefetch)
#   experiments/multigpu/live_harvest.sh OUT_DIR [FAULTLINE_BIN]
# HARVESTERS (traces), BUDGETS, PEER_BUDGET, NEIGHBOUR (a trace, or "none": GPU 1 idle) and
# REPEATS (default 1; the variants take turns, so a drift in the machine falls on all) choose the
# runs; PER_KERNEL=1 adds a row per kernel. One result per run in
# OUT_DIR/TRACE-VARIANT-BUDGET.json, repeats after the first in .r2.json, .r3.json, ... (.err
# when it failed); the neighbour's last run in
# OUT_DIR/neighbour.json and how many times it ran in OUT_DIR/neighbour.runs. Brought back here as
# experiments/multigpu/data/CAMPAIGN/, the folder gets its manifest from
# experiments/make_manifest.py.
set -u
out=${1:?usage: live_harvest.sh OUT_DIR [FAULTLINE_BIN]}
bin=${2:-build/faultline}
peer=${PEER_BUDGET:-4G}
neighbour=${NEIGHBOUR:-resnet50}
mkdir -p "$out"
touch "$out/.running"
[ "$neighbour" = none ] && rm -f "$out/.running"
(
  while [ -f "$out/.running" ]; do
    "$bin" replay --trace "traces/real/$neighbour.fltrace" --device 1 --budget 1.0 \
      --out "$out/neighbour.json" 2>>"$out/neighbour.err" || break
    echo run >>"$out/neighbour.runs"
  done
) &
sleep 5 # the neighbour has its memory before the harvester starts
extra=()
[ "${PER_KERNEL:-0}" = 1 ] && extra=(--per-kernel)
for t in ${HARVESTERS:-gpt2-small bert-large}; do
  for b in ${BUDGETS:-0.5}; do
    for r in $(seq 1 "${REPEATS:-1}"); do
      for v in host preevict peer harvest; do
        case $v in
        host) p=ondemand params='{}' ;;
        preevict) p=harvest params='{"evict_to_peer": false, "multi_path_prefetch": false}' ;;
        peer) p=harvest params='{"multi_path_prefetch": false}' ;;
        harvest) p=harvest params='{}' ;;
        esac
        name="$out/$t-$v-$b$([ "$r" -gt 1 ] && echo ".r$r")"
        if timeout 300 "$bin" replay --trace "traces/real/$t.fltrace" --device 0 --budget "$b" \
          --policy "$p" --params "$params" --peer-budget "$peer" ${extra[@]+"${extra[@]}"} --out "$name.json" \
          2>"$name.err"; then
          rm -f "$name.err"
          echo "$t $v $b (repeat $r) done"
        else
          echo "$t $v $b (repeat $r) failed: $(tail -1 "$name.err")"
        fi
      done
    done
  done
done
rm -f "$out/.running"
wait
