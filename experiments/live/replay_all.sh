#!/usr/bin/env bash
# Replays shipped traces on the GPU machine with `faultline replay` for each policy and budget,
# writing one result per run into OUT_DIR/TRACE-POLICY-BUDGET.json.
#   experiments/live/replay_all.sh OUT_DIR [FAULTLINE_BIN]
# TRACES, POLICIES and BUDGETS (space-separated) choose the grid; libfaultline_live.so must sit
# beside the binary. A run that cannot hold its budget (a kernel needing more 2 MB chunks than
# the budget) fails with that message and the others go on.
set -u
out=${1:?usage: replay_all.sh OUT_DIR [FAULTLINE_BIN]}
bin=${2:-build/faultline}
mkdir -p "$out"
for t in ${TRACES:-stream pagerank resnet50 gpt2-small gpt2-medium bert-large}; do
  for p in ${POLICIES:-ondemand pump}; do
    for b in ${BUDGETS:-1.0 0.5}; do
      if "$bin" replay --trace "traces/real/$t.fltrace" --policy "$p" --budget "$b" \
        --out "$out/$t-$p-$b.json"; then
        echo "$t $p $b done"
      else
        echo "$t $p $b failed"
      fi
    done
  done
done
