#!/usr/bin/env bash
# Device call B (session 2026-11-27 13:38): calibrate this H100 per machine (after the untimed
# warm-up replay), then timed replays of the second hold-out set (captured on H200 f398f79a,
# experiments/live/data/h200-holdout2-traces/) with per-kernel rows at 75% and 50%. The results
# are tarred after each stage.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/c; mkdir -p $o
limit=${LIMIT:-440}
pack() { tar czf $OUT/callB.tmp.tgz -C $OUT c && mv $OUT/callB.tmp.tgz $OUT/callB.tgz; }
experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
PER_KERNEL=1 TRACE_DIR=experiments/live/data/h200-holdout2-traces BUDGETS="0.75 0.5" \
  STOP_AFTER=$((limit - 20 - SECONDS)) \
  experiments/live/replay_all.sh $o/holdout2 .dev/faultline > $o/holdout2.log 2>&1
echo "end at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt; tail -3 $o/calibrate.log; tail -4 $o/holdout2.log
