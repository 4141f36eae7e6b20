#!/usr/bin/env bash
# Device call F (session 2026-11-27 18:08): why live DeepUM is slower than simulated when both
# take the same actions: per-machine calibration, then per-kernel DeepUM variants.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/f; mkdir -p $o
pack() { tar czf $OUT/f.tmp.tgz -C $OUT f && mv $OUT/f.tmp.tgz $OUT/f.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total,driver_version --format=csv > $o/machine-call.txt 2>&1
FULL=0 experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
experiments/live/diag_deepum.sh $o/resnet50 resnet50 0.75 > $o/diag-resnet50.log 2>&1
echo "resnet50 at $SECONDS s" >> $o/host.txt; pack
if [ $SECONDS -lt 380 ]; then
  experiments/live/diag_deepum.sh $o/moe moe 0.5 > $o/diag-moe.log 2>&1
  echo "moe at $SECONDS s" >> $o/host.txt; pack
fi
cat $o/host.txt; tail -n 3 $o/calibrate.log $o/diag-*.log
