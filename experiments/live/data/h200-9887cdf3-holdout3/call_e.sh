#!/usr/bin/env bash
# Device call E (session 2026-11-29 20:10), on the H200 of calls B, C and D (calibrated in /root/d):
# the third hold-out set's lstm timed (not drained) under the four policies at 75% and
# 50%, into /root/d with the runs of call D, then a third
# per-machine calibration (campaign.sh recalibrate: the profile refitted from all three moments).
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/d; limit=${LIMIT:-570}
pack() { tar czf $OUT/d.tmp.tgz -C /root d && mv $OUT/d.tmp.tgz $OUT/d.tgz; }
[ -f $o/calibrate.log ] || { echo "no calibration in $o: the machine is not call B's"; exit 3; }
TRACE_DIR=experiments/live/data/h200-holdout3-traces TRACES=lstm \
  POLICIES="ondemand deepum pump oracle" BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 110)) \
  experiments/live/campaign.sh $o replay >> $o/runs.log 2>&1
echo "lstm timed at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
experiments/live/campaign.sh $o recalibrate >> $o/calibrate-stage.log 2>&1
echo "recalibrated at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
cat $o/host.txt; grep -E "done|failed|not started" $o/runs.log; grep -v "^wrote" $o/calibrate.log | tail -3
