#!/usr/bin/env bash
# Device call Q (session 2026-11-29 06:41): the instance's per-machine calibration, then the
# second hold-out set's DeepUM runs (cg, unet) with per-kernel rows and a row per migration call.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o/calls
pack() { tar czf $OUT/q.tmp.tgz -C /root k && mv $OUT/q.tmp.tgz $OUT/q.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
d=experiments/live/data/h200-holdout2-traces
for run in cg:deepum:0.75 unet:deepum:0.5 cg:deepum:0.5 unet:deepum:0.75 cg:ondemand:0.75 unet:ondemand:0.5; do
  IFS=: read t p b <<< "$run"
  .dev/faultline replay --trace $d/$t.fltrace --policy $p --budget $b --per-kernel \
    --call-log $o/calls/$t-$p-$b.csv --out $o/calls/$t-$p-$b.json >> $o/calls.log 2>&1
  echo "$t $p $b at $SECONDS s" >> $o/host.txt; pack
done
cat $o/host.txt; tail -3 $o/calibrate.log; tail -5 $o/calls.log
