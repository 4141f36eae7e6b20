#!/usr/bin/env bash
# Device call A (session 2026-11-29 17:00): on one fresh H200, the per-machine calibration, then
# the third hold-out set (bfs, vit, lstm) at 75% and 50% under the four policies with CUPTI
# drained after every kernel (DRAIN=1: bytes each way counted in full, times not comparable),
# lstm's pump runs last; then, time left, the second set's unet runs the earlier drained
# campaign did not reach. Results in /root/d, tarred into $OUT after each stage; a second call
# runs this again and goes on where the last stopped (replay_all.sh skips runs made).
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/d; mkdir -p $o
limit=${LIMIT:-585}
pack() { tar czf $OUT/d.tmp.tgz -C /root d && mv $OUT/d.tmp.tgz $OUT/d.tgz; }
left() { echo $((limit - 40 - SECONDS)); }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
if [ ! -f $o/calibrate.log ]; then
  FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
  echo "calibrated at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
fi
for stage in "bfs vit|ondemand deepum oracle pump" "lstm|ondemand deepum oracle" "lstm|pump"; do
  [ $(left) -gt 20 ] || break
  DRAIN=1 TRACE_DIR=experiments/live/data/h200-holdout3-traces TRACES="${stage%|*}" \
    POLICIES="${stage#*|}" BUDGETS="0.75 0.5" STOP_AFTER=$(left) \
    experiments/live/replay_all.sh $o/holdout3-drained .dev/faultline >> $o/holdout3-drained.log 2>&1
  echo "$stage at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
done
if [ $(grep -c done $o/holdout3-drained.log) -ge 24 ] && [ $(left) -gt 20 ]; then
  DRAIN=1 TRACE_DIR=experiments/live/data/h200-holdout2-traces TRACES=unet \
    POLICIES="deepum pump oracle" BUDGETS="0.75 0.5" STOP_AFTER=$(left) \
    experiments/live/replay_all.sh $o/holdout2-drained .dev/faultline >> $o/holdout2-drained.log 2>&1
  echo "unet at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
fi
cat $o/host.txt; grep -v "^wrote" $o/calibrate.log | tail -4; grep -c done $o/*.log; grep failed $o/*.log | tail
