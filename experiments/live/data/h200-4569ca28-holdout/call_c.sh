#!/usr/bin/env bash
# Device call C (session 2026-11-28 21:04): on a fresh H200, its per-machine calibration at
# 0d3fe67 (with the eviction_runs benchmark), then timed replays of the first and second hold-out
# sets under the four policies at 75% and 50% (48 runs), then bfs (third set) as time allows.
# Results kept in /root/k and tarred into $OUT after each stage.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o
limit=${LIMIT:-560}
pack() { tar czf $OUT/c.tmp.tgz -C /root k && mv $OUT/c.tmp.tgz $OUT/c.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
for dir in h200-holdout-traces h200-holdout2-traces; do
  TRACE_DIR=experiments/live/data/$dir BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 40 - SECONDS)) \
    experiments/live/replay_all.sh $o/$dir .dev/faultline >> $o/holdout.log 2>&1
  echo "$dir at $SECONDS s" >> $o/host.txt; pack
done
TRACE_DIR=experiments/live/data/h200-holdout3-traces TRACES=bfs BUDGETS="0.5 0.75" STOP_AFTER=$((limit - 40 - SECONDS)) \
  experiments/live/replay_all.sh $o/holdout3 .dev/faultline >> $o/holdout3.log 2>&1
echo "bfs at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt; tail -3 $o/calibrate.log; cat $o/holdout.log $o/holdout3.log | grep -v "^$" | tail -60
