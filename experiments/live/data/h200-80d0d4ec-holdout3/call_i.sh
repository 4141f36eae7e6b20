#!/usr/bin/env bash
# Device call I (session 2026-11-27 18:08): capture the third hold-out set (bfs, vit, lstm),
# calibrate this instance per machine, then timed replays of it with per-kernel rows at 75% and
# 50% under the four policies. Tarred after each stage.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/i; mkdir -p $o
limit=${LIMIT:-560}
pack() { tar czf $OUT/i.tmp.tgz -C $OUT i && mv $OUT/i.tmp.tgz $OUT/i.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv > $o/machine-call.txt 2>&1
HOLDOUT="bfs vit lstm" experiments/live/campaign.sh $o capture > $o/capture-stage.log 2>&1
echo "captured at $SECONDS s" >> $o/host.txt; pack
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
PER_KERNEL=1 TRACE_DIR=$o/holdout BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 30 - SECONDS)) \
  experiments/live/replay_all.sh $o/holdout3 .dev/faultline > $o/holdout3.log 2>&1
echo "hold-out 3 done at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt $o/capture-stage.log | cut -c1-300 | tail -30; tail -5 $o/calibrate.log $o/holdout3.log
