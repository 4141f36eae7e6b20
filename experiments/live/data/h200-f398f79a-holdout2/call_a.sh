#!/usr/bin/env bash
# Device call A (session 2026-11-27 13:38): capture the second hold-out set (radix-sort, cg,
# unet), calibrate this instance per machine and in full, then timed replays of the new
# hold-out with per-kernel rows at 75% and 50%, then (time left) the same drained. The results
# are tarred after each stage (a call killed at its limit brings back the last tarball).
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/c; mkdir -p $o
limit=${LIMIT:-540}
pack() { tar czf $OUT/callA.tmp.tgz -C $OUT c && mv $OUT/callA.tmp.tgz $OUT/callA.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv > $o/machine-call.txt 2>&1
HOLDOUT="radix-sort cg unet" experiments/live/campaign.sh $o capture > $o/capture-stage.log 2>&1
echo "captured at $SECONDS s" >> $o/host.txt; pack
FULL=${FULL-1} experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
# STOP_AFTER counts from replay_all.sh's own start
PER_KERNEL=1 TRACE_DIR=$o/holdout BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 40 - SECONDS)) \
  experiments/live/replay_all.sh $o/holdout2 .dev/faultline > $o/holdout2.log 2>&1
echo "hold-out 2 done at $SECONDS s" >> $o/host.txt; pack
DRAIN=1 TRACE_DIR=$o/holdout BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 25 - SECONDS)) \
  experiments/live/replay_all.sh $o/holdout2-drained .dev/faultline > $o/holdout2-drained.log 2>&1
echo "end at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt $o/capture-stage.log | cut -c1-300 | tail -30; tail -3 $o/calibrate.log $o/holdout2.log $o/holdout2-drained.log
