#!/usr/bin/env bash
# Device call S (session 2026-11-29 06:41): on a fresh H200, the instance's per-machine
# calibration, then resnet50 and moe under ondemand, pump and the oracle at 50%, three whole
# passes of that grid one after another (REPEATS=3): how far one instance's own runs of the same
# replay lie apart, minutes apart.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o
limit=${LIMIT:-570}
pack() { tar czf $OUT/s.tmp.tgz -C /root k && mv $OUT/s.tmp.tgz $OUT/s.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
REPEATS=3 TRACES="resnet50 moe" POLICIES="ondemand pump oracle" BUDGETS="0.5" STOP_AFTER=$((limit - 30 - SECONDS)) \
  experiments/live/replay_all.sh $o/repeats .dev/faultline >> $o/repeats.log 2>&1
echo "repeats at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt; tail -3 $o/calibrate.log; tail -40 $o/repeats.log
