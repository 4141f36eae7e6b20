#!/usr/bin/env bash
# Device calls K and L (session 2026-11-28 18:04): on one fresh H200, its per-machine calibration
# (the swap benchmark timing the same calls apart beside the pairs), then timed replays of the
# seven shipped traces in the device tree at 75% and 50%: pump and the oracle first (the
# prefetch-bound runs the swap extra prices), then ondemand and deepum. Results kept in /root/k
# (the machine stays warm between the two calls) and tarred into $OUT after each stage; call L
# runs this again and goes on where K stopped (replay_all.sh skips runs made).
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o
limit=${LIMIT:-560}
pack() { tar czf $OUT/k.tmp.tgz -C /root k && mv $OUT/k.tmp.tgz $OUT/k.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
if [ ! -f $o/calibrate.log ]; then
  FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
  echo "calibrated at $SECONDS s" >> $o/host.txt; pack
fi
traces="resnet50 bert-large moe pagerank stream strided host-stencil"
TRACES="$traces" POLICIES="pump oracle" BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 40 - SECONDS)) \
  experiments/live/replay_all.sh $o/shipped .dev/faultline >> $o/shipped.log 2>&1
echo "pump and oracle at $SECONDS s" >> $o/host.txt; pack
TRACES="$traces" POLICIES="ondemand deepum" BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 40 - SECONDS)) \
  experiments/live/replay_all.sh $o/shipped .dev/faultline >> $o/shipped.log 2>&1
echo "ondemand and deepum at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt; tail -4 $o/calibrate.log; grep -c done $o/shipped.log; tail -3 $o/shipped.log
