#!/usr/bin/env bash
# Device call F (session 2026-11-29 20:10): on a fresh H200, a check of the median profile
# (configs/gpus/h200-median.json) on a machine it may never have seen: the per-machine
# calibration (campaign.sh calibrate), then the third hold-out set's vit and bfs timed under the
# four policies at 75% and 50% until the call's time runs out, into /root/d.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/d; mkdir -p $o
limit=${LIMIT:-380}
pack() { tar czf $OUT/d.tmp.tgz -C /root d && mv $OUT/d.tmp.tgz $OUT/d.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
TRACE_DIR=experiments/live/data/h200-holdout3-traces TRACES="vit bfs" \
  POLICIES="ondemand deepum pump oracle" BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 40)) \
  experiments/live/campaign.sh $o replay > $o/runs.log 2>&1
echo "vit bfs timed at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
cat $o/host.txt; grep -E "done|failed|not started" $o/runs.log; grep -v "^wrote" $o/calibrate.log | tail -2
