#!/usr/bin/env bash
# Device call G (session 2026-11-27 15:23): the second hold-out set drained (CUPTI's records
# drained after every kernel: bytes each way, times not compared) on an H100.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/g; mkdir -p $o
limit=${LIMIT:-420}
pack() { tar czf $OUT/g.tmp.tgz -C $OUT g && mv $OUT/g.tmp.tgz $OUT/g.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total,driver_version --format=csv > $o/machine-call.txt 2>&1
DRAIN=1 TRACE_DIR=experiments/live/data/h200-holdout2-traces BUDGETS="0.75 0.5" \
  STOP_AFTER=$((limit - 20 - SECONDS)) experiments/live/replay_all.sh $o/drained .dev/faultline > $o/drained.log 2>&1
echo "end at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt $o/machine-call.txt; tail -n 3 $o/drained.log
