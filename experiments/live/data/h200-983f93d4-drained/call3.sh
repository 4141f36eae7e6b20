#!/usr/bin/env bash
# Device call 3 (session 2026-11-27 10:27): calibrate this H200 per machine and in full (CPU
# idle), then drained replays (bytes only) of the short shipped traces beside libFuzzer on the
# host's other cores (nice 19).
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/c; mkdir -p $o
FULL=1 experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt
n=$(( $(nproc) - 3 )); left=$(( 560 - SECONDS ))
f=$OUT/fuzz; mkdir -p $f/ah/corpus $f/art
cp tests/fuzz/corpus/alloc_history/* $f/ah/corpus/
for i in $(seq 1 $n); do (cd $f/ah && ASAN_OPTIONS=detect_leaks=1 nice -n 19 $OLDPWD/.dev/fuzz_alloc_history corpus -seed=$((400+i)) -max_total_time=$left -timeout=120 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$f/art/ah$i- > log$i 2>&1 &); done
echo "fuzz: $n alloc_history workers for $left s from $SECONDS s" >> $o/host.txt
( DRAIN=1 TRACES="stream strided pagerank host-stencil" POLICIES="deepum pump oracle ondemand" BUDGETS="0.75 0.5" \
  STOP_AFTER=$((left - 60)) experiments/live/replay_all.sh $o/drained .dev/faultline > $o/drained.log 2>&1 ) &
drainer=$!
sleep 5
while pgrep -f fuzz_alloc_history > /dev/null; do sleep 2; [ $SECONDS -gt 580 ] && pkill -INT -f fuzz_; done
pkill -f "replay_all.sh $o/drained"; pkill -f "faultline replay"; wait $drainer 2>/dev/null
echo "end at $SECONDS s" >> $o/host.txt
for l in $f/ah/log*; do echo "ah $(basename $l) $(grep -h 'stat::number_of_executed_units' $l | awk '{print $2}') $(grep -c -E 'ERROR|SUMMARY|timeout|crash' $l)"; done > $f/counts.txt
awk '{s[$1]+=$3} END {for (k in s) print k, s[k]}' $f/counts.txt >> $o/host.txt
mkdir -p $f/logs; for l in $f/ah/log*; do cp $l $f/logs/ah-$(basename $l); done
tar czf $OUT/call3.tgz -C $OUT c fuzz/counts.txt fuzz/logs fuzz/art
cat $o/host.txt $o/calibrate.log; cat $o/drained.log; ls $f/art | head
