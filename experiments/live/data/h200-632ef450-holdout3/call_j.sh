#!/usr/bin/env bash
# Device call J (session 2026-11-28 18:04): the held-prefetch probe, this instance's per-machine
# calibration (with the new spread-call measurement), then timed replays with per-kernel rows of
# the third hold-out set's runs not made yet (lstm oracle, all of vit) at 75% and 50%, then the
# shipped traces under pump (prefetch-bound). Tarred after each stage.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/j; mkdir -p $o
limit=${LIMIT:-570}
pack() { tar czf $OUT/j.tmp.tgz -C $OUT j && mv $OUT/j.tmp.tgz $OUT/j.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv > $o/machine-call.txt 2>&1
.dev/held_prefetch $PWD/.dev/libfaultline_live.so 8192 > $o/held_prefetch.txt 2>&1
echo "probe at $SECONDS s" >> $o/host.txt; pack
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
h3=experiments/live/data/h200-holdout3-traces
PER_KERNEL=1 TRACE_DIR=$h3 TRACES=lstm POLICIES=oracle BUDGETS="0.75 0.5" \
  STOP_AFTER=$((limit - 60)) experiments/live/replay_all.sh $o/holdout3 .dev/faultline > $o/holdout3.log 2>&1
pack
PER_KERNEL=1 TRACE_DIR=$h3 TRACES=vit BUDGETS="0.75 0.5" \
  STOP_AFTER=$((limit - 60)) experiments/live/replay_all.sh $o/holdout3 .dev/faultline >> $o/holdout3.log 2>&1
echo "hold-out 3 done at $SECONDS s" >> $o/host.txt; pack
PER_KERNEL=1 TRACES="resnet50 gpt2-small" POLICIES=pump BUDGETS="0.75 0.5" \
  STOP_AFTER=$((limit - 60)) experiments/live/replay_all.sh $o/pump .dev/faultline > $o/pump.log 2>&1
echo "pump done at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt $o/held_prefetch.txt; tail -3 $o/calibrate.log; cat $o/holdout3.log $o/pump.log
