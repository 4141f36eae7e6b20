#!/usr/bin/env bash
# Device call F: right after call D on the same warm H100 (its calibration stands): timed
# replays of the second hold-out set, then of four more shipped traces, at 75% and 50%.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/f; mkdir -p $o
limit=${LIMIT:-560}
pack() { tar czf $OUT/f.tmp.tgz -C $OUT f && mv $OUT/f.tmp.tgz $OUT/f.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total,driver_version --format=csv > $o/machine-call.txt 2>&1
TRACE_DIR=experiments/live/data/h200-holdout2-traces BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 20 - SECONDS)) \
  experiments/live/replay_all.sh $o/holdout2 .dev/faultline > $o/holdout2.log 2>&1
echo "hold-out 2 at $SECONDS s" >> $o/host.txt; pack
TRACES="host-stencil pagerank moe strided" BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 20 - SECONDS)) \
  experiments/live/replay_all.sh $o/shipped .dev/faultline > $o/replay.log 2>&1
echo "end at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt $o/machine-call.txt; tail -n 3 $o/holdout2.log $o/replay.log
