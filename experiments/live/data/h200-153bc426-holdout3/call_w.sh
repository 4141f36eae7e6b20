#!/usr/bin/env bash
# Device calls W1-W3 (session 2026-11-29 11:47): on one fresh H200, the campaign's per-machine
# calibration (at1), timed replays of the seven shipped traces at 75% and 50% under the four
# policies (pump and the oracle first), recalibrate (at2), then the third and second hold-out
# sets; every run with its call log (CALL_LOG=1), cut to its eviction rows
# (TRACE-POLICY-BUDGET.calls.e.csv) so that each run's eviction price can be read. Results in
# /root/w (the machine stays warm between calls), tarred into $OUT after each stage; each call
# runs this again and goes on where the last stopped (replay_all.sh skips runs made).
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/w; mkdir -p $o
limit=${LIMIT:-585}
cut_logs() { for f in $(find $o -name '*.calls.csv'); do
  awk -F, 'NR == 1 || $2 == "e"' "$f" > "${f%.csv}.e.csv" && rm "$f"; done; }
pack() { cut_logs; tar czf $OUT/w.tmp.tgz -C /root w && mv $OUT/w.tmp.tgz $OUT/w.tgz; }
left() { echo $((limit - 50 - SECONDS)); }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
if [ ! -f $o/calibrate.log ]; then
  FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
  echo "calibrated at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
fi
traces="resnet50 bert-large moe pagerank stream strided host-stencil"
for pols in "pump oracle" "ondemand deepum"; do
  [ $(left) -gt 30 ] || break
  CALL_LOG=1 TRACES="$traces" POLICIES="$pols" BUDGETS="0.75 0.5" STOP_AFTER=$(left) \
    experiments/live/replay_all.sh $o/shipped .dev/faultline >> $o/shipped.log 2>&1
  echo "$pols at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
done
if [ $(grep -c done $o/shipped.log) -ge 56 ] && [ ! -f $o/recalibrated ] && [ $(left) -gt 120 ]; then
  experiments/live/campaign.sh $o recalibrate >> $o/calibrate-stage.log 2>&1 && touch $o/recalibrated
  echo "recalibrated at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
fi
if [ -f $o/recalibrated ]; then
  for set in holdout3 holdout2; do
    [ $(left) -gt 30 ] || break
    CALL_LOG=1 TRACE_DIR=experiments/live/data/h200-$set-traces BUDGETS="0.75 0.5" \
      STOP_AFTER=$(left) experiments/live/replay_all.sh $o/$set .dev/faultline >> $o/$set.log 2>&1
    echo "$set at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
  done
fi
cat $o/host.txt; grep -v "^wrote" $o/calibrate.log | tail -4; grep -c done $o/*.log; grep failed $o/*.log | tail
