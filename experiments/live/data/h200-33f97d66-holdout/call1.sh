#!/usr/bin/env bash
# Device call 1 (session 2026-11-27 10:27): calibrate this instance, a timed hold-out campaign
# with per-kernel rows (quiet CPU), then fuzzing on the spare cores beside drained hold-out runs.
# Run from the repository root with .dev/ staged (experiments/capture/stage_device.sh, plus
# build-sanitize/fuzz/fuzz_alloc_history and fuzz_raw_capture, stripped), .dev carried.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/c; mkdir -p $o
{ date -u; nproc; nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv; } > $o/host.txt 2>&1
experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt
PER_KERNEL=1 TRACE_DIR=experiments/live/data/h200-holdout-traces BUDGETS="0.75 0.5" STOP_AFTER=330 \
  experiments/live/replay_all.sh $o/holdout .dev/faultline > $o/holdout.log 2>&1
echo "hold-out done at $SECONDS s" >> $o/host.txt
# fuzzing: shared corpus per target, one process per seed, nice 19; 3 cores left to the replay
n=$(( $(nproc) - 3 )); na=$(( n * 3 / 4 )); nr=$(( n - na ))
left=$(( 575 - SECONDS - 15 )); [ $left -lt 30 ] && left=30
f=$OUT/fuzz; mkdir -p $f/ah/corpus $f/rc/corpus $f/art
cp tests/fuzz/corpus/alloc_history/* $f/ah/corpus/; cp tests/fuzz/corpus/raw_capture/* $f/rc/corpus/
for i in $(seq 1 $na); do (cd $f/ah && ASAN_OPTIONS=detect_leaks=1 nice -n 19 $OLDPWD/.dev/fuzz_alloc_history corpus -seed=$((200+i)) -max_total_time=$left -timeout=120 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$f/art/ah$i- > log$i 2>&1 &); done
for i in $(seq 1 $nr); do (cd $f/rc && ASAN_OPTIONS=detect_leaks=1 nice -n 19 $OLDPWD/.dev/fuzz_raw_capture corpus -seed=$((300+i)) -max_total_time=$left -timeout=60 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$f/art/rc$i- > log$i 2>&1 &); done
echo "fuzz: $na alloc_history + $nr raw_capture workers for $left s from $SECONDS s" >> $o/host.txt
( DRAIN=1 TRACE_DIR=experiments/live/data/h200-holdout-traces TRACES="hash-join transpose2d llama" \
  BUDGETS="0.75 0.5" STOP_AFTER=$((left - 20)) \
  experiments/live/replay_all.sh $o/holdout-drained .dev/faultline > $o/holdout-drained.log 2>&1 ) &
drainer=$!
sleep 5
while pgrep -f "fuzz_(alloc_history|raw_capture)" > /dev/null; do sleep 2; [ $SECONDS -gt 585 ] && pkill -INT -f fuzz_; done
pkill -f "replay_all.sh $o/holdout-drained"; pkill -f "faultline replay"; wait $drainer 2>/dev/null
echo "end at $SECONDS s" >> $o/host.txt
for t in ah rc; do for l in $f/$t/log*; do echo "$t $(basename $l) $(grep -h 'stat::number_of_executed_units' $l | awk '{print $2}') $(grep -c -E 'ERROR|SUMMARY|timeout|crash' $l)"; done; done > $f/counts.txt
cat $f/counts.txt | awk '{s[$1]+=$3} END {for (k in s) print k, s[k]}' >> $o/host.txt
mkdir -p $f/logs; for t in ah rc; do for l in $f/$t/log*; do cp $l $f/logs/$t-$(basename $l); done; done
tar czf $OUT/call1.tgz -C $OUT c fuzz/counts.txt fuzz/logs fuzz/art
cat $o/host.txt; tail -3 $o/holdout.log $o/holdout-drained.log; ls $f/art | head
