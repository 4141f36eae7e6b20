#!/usr/bin/env bash
# Device call H (session 2026-11-27 18:08): the discard-history probe at three sizes on one
# instance, its per-machine calibration, and per-kernel DeepUM replays of resnet50 (75%) and
# moe (50%) on it.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/h; mkdir -p $o/runs
pack() { tar czf $OUT/h.tmp.tgz -C $OUT h && mv $OUT/h.tmp.tgz $OUT/h.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total,driver_version --format=csv > $o/machine-call.txt 2>&1
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
for b in 64 256 1024; do timeout 200 .dev/discard_history $PWD/.dev/libfaultline_live.so $b >> $o/discard_history.txt 2>&1; pack; done
echo "probe at $SECONDS s" >> $o/host.txt
for tb in "resnet50 0.75" "moe 0.5"; do
  set -- $tb
  printf '{"capacity": {"fraction_of_footprint": %s, "mode": "budget"}, "policy": {"name": "deepum", "params": {}}}\n' $2 > $o/runs/$1.cfg.json
  timeout 120 .dev/faultline replay --trace traces/real/$1.fltrace --config $o/runs/$1.cfg.json --per-kernel --out $o/runs/$1-deepum-$2.json > $o/runs/$1.log 2>&1
  echo "$1 at $SECONDS s" >> $o/host.txt; pack
done
cat $o/host.txt $o/discard_history.txt; tail -3 $o/calibrate.log
