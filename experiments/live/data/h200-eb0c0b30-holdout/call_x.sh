#!/usr/bin/env bash
# Device calls X and Y (session 2026-11-29 14:46; Y on the next fresh machine, the same script): hash-join pump (the first hold-out set's one
# systematic miss on the H200: +18% on 8369fa7f, +10% median elsewhere) diagnosed on a fresh
# H200: the per-machine calibration, then hash-join under pump, ondemand and the oracle at 50% and
# 75% timed (two passes) with every migration call logged, the same with a row per kernel; vit
# pump and llama DeepUM at 75% per kernel.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/x; mkdir -p $o
nvidia-smi --query-gpu=name,uuid,driver_version,memory.used,memory.total --format=csv > $o/machine.txt 2>&1
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated $SECONDS s" >> $o/host.txt
h=experiments/live/data/h200-holdout-traces
CALL_LOG=1 REPEATS=2 TRACE_DIR=$h TRACES=hash-join POLICIES="pump ondemand oracle" BUDGETS="0.5 0.75" \
  STOP_AFTER=400 experiments/live/replay_all.sh $o/timed .dev/faultline >> $o/runs.log 2>&1
echo "timed $SECONDS s" >> $o/host.txt
PER_KERNEL=1 CALL_LOG=1 TRACE_DIR=$h TRACES=hash-join POLICIES="pump ondemand oracle" BUDGETS="0.5 0.75" \
  STOP_AFTER=450 experiments/live/replay_all.sh $o/per-kernel .dev/faultline >> $o/runs.log 2>&1
PER_KERNEL=1 TRACE_DIR=experiments/live/data/h200-holdout3-traces TRACES=vit POLICIES=pump BUDGETS="0.75" \
  STOP_AFTER=480 experiments/live/replay_all.sh $o/per-kernel .dev/faultline >> $o/runs.log 2>&1
PER_KERNEL=1 TRACE_DIR=$h TRACES=llama POLICIES=deepum BUDGETS="0.75" \
  STOP_AFTER=500 experiments/live/replay_all.sh $o/per-kernel .dev/faultline >> $o/runs.log 2>&1
echo "per-kernel $SECONDS s" >> $o/host.txt
tar czf - -C /root x | split -b 15M - $OUT/x.tgz.part-
cat $o/host.txt; tail -3 $o/calibrate.log; cat $o/runs.log; ls -la $OUT
