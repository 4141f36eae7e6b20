#!/usr/bin/env bash
# Device call T/U (session 2026-11-29 09:00): does one calibration before a campaign price the
# runs after it, or do the costs it measures drift within the campaign? On one H200: passes of
# the same grid (resnet50, moe, unet, hash-join, cg under ondemand, deepum, pump and the oracle at
# 50%), each pass bracketed by a per-machine calibration (`faultline calibrate --from h200`).
#   call_t.sh FIRST_PASS LAST_PASS   (call T: 1 2, call U: 3 4; calibration k before pass k,
#   one more after the last)
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o
first=${1:-1} last=${2:-2}
limit=${LIMIT:-585}
pack() { tar czf $OUT/t.tmp.tgz -C /root k && mv $OUT/t.tmp.tgz $OUT/t$first.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
[ -f $o/profile.txt ] || FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
p=$(cat $o/profile.txt)
cal() { # calibration K into $o/cal/K
  local began=$SECONDS
  [ -d $o/cal/$1 ] && return
  .dev/faultline calibrate --name $p-c$1 --from h200 --out-dir $o/cal/$1 >> $o/cal.log 2>&1
  echo "calibration $1: $((SECONDS - began)) s, ended at $(date -u +%T)" | tee -a $o/host.txt
}
for k in $(seq $first $last); do
  cal $k; pack
  for dir in traces/real experiments/live/data/h200-holdout-traces experiments/live/data/h200-holdout2-traces; do
    case $dir in traces/real) ts="resnet50 moe";; *holdout-traces) ts=hash-join;; *) ts="unet cg";; esac
    TRACE_DIR=$dir TRACES="$ts" BUDGETS=0.5 STOP_AFTER=$((limit - 60 - SECONDS)) \
      experiments/live/replay_all.sh $o/pass$k .dev/faultline >> $o/pass$k.log 2>&1
  done
  echo "pass $k ended at $(date -u +%T) ($SECONDS s)" | tee -a $o/host.txt; pack
done
cal $((last + 1)); pack
cat $o/host.txt; tail -5 $o/cal.log; tail -25 $o/pass$last.log
