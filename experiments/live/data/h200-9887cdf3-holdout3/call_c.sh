#!/usr/bin/env bash
# Device call C (session 2026-11-29 20:10), on the H200 of call B (its calibration in /root/d):
# the second hold-out set's unet runs that the drained campaign on f398f79a did not make,
# deepum, pump and oracle at 75% and 50%, CUPTI drained (DRAIN=1), into /root/d/holdout2-drained.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/d; limit=${LIMIT:-560}
pack() { tar czf $OUT/d.tmp.tgz -C /root d && mv $OUT/d.tmp.tgz $OUT/d.tgz; }
[ -f $o/calibrate.log ] || { echo "no calibration in $o: the machine is not call B's"; exit 3; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
DRAIN=1 TRACE_DIR=experiments/live/data/h200-holdout2-traces TRACES=unet \
  POLICIES="deepum pump oracle" BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 60)) \
  experiments/live/replay_all.sh $o/holdout2-drained .dev/faultline >> $o/holdout2-drained.log 2>&1
echo "unet at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
cat $o/host.txt; grep -E "done|failed|not started" $o/holdout2-drained.log
