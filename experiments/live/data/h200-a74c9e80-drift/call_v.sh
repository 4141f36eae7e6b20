#!/usr/bin/env bash
# Device call V (session 2026-11-29 09:00): the drift campaign of h200-9bc851db-drift on a second
# instance, with the campaign's own calibrate/recalibrate stages: calibration at1, pass 1,
# recalibrate (at2), pass 2, recalibrate (at3); every run with its call log (CALL_LOG=1). The grid:
# resnet50, moe, hash-join, unet, cg under ondemand, deepum, pump and the oracle at 50%.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/v; mkdir -p $o
limit=${LIMIT:-585}
pack() { tar czf $OUT/v.tmp.tgz -C /root v && mv $OUT/v.tmp.tgz $OUT/v.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
pass() { # pass $1 of the grid into $o (REPEATS=$1: the earlier passes' results are skipped)
  for dir in traces/real experiments/live/data/h200-holdout-traces experiments/live/data/h200-holdout2-traces; do
    case $dir in traces/real) ts="resnet50 moe";; *holdout-traces) ts=hash-join;; *) ts="unet cg";; esac
    CALL_LOG=1 REPEATS=$1 TRACE_DIR=$dir TRACES="$ts" BUDGETS=0.5 STOP_AFTER=$((limit - 60 - SECONDS)) \
      experiments/live/replay_all.sh $o .dev/faultline >> $o/passes.log 2>&1
  done
  echo "pass $1 ended at $(date -u +%T) ($SECONDS s)" | tee -a $o/host.txt
}
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $(date -u +%T) ($SECONDS s)" | tee -a $o/host.txt; pack
pass 1; pack
experiments/live/campaign.sh $o recalibrate >> $o/calibrate-stage.log 2>&1; pack
pass 2; pack
experiments/live/campaign.sh $o recalibrate >> $o/calibrate-stage.log 2>&1
echo "recalibrated at $(date -u +%T) ($SECONDS s)" | tee -a $o/host.txt; pack
cat $o/host.txt; cat $o/calibrate.log | grep -v "^wrote"; tail -5 $o/passes.log; ls $o/profile/*/
