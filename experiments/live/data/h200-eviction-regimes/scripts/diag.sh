#!/usr/bin/env bash
# .dev/diag.sh (a01ec8bc/): per-machine calibration, the migration-mix probe (eviction by
# arrival, then all cases), per-kernel replays with per-call costs.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
c=/tmp/c; mkdir -p $c
nvidia-smi -L
experiments/live/campaign.sh $c calibrate
echo "calibrated: $SECONDS s"
.dev/migration_mix .dev/libfaultline_live.so 256 3 evict >$c/evict.txt 2>&1
echo "evict probe: $SECONDS s"; cat $c/evict.txt
PER_KERNEL=1 TRACES="resnet50 pagerank gpt2-small" POLICIES="oracle ondemand pump" BUDGETS="0.5 0.75" \
  STOP_AFTER=$((390 - SECONDS)) experiments/live/replay_all.sh $c/runs .dev/faultline >$c/runs.log 2>&1
echo "runs: $SECONDS s"
PER_KERNEL=1 TRACE_DIR=experiments/live/data/h200-holdout-traces TRACES="transpose2d hash-join" \
  POLICIES="oracle ondemand" BUDGETS="0.75 0.5" STOP_AFTER=$((470 - SECONDS)) \
  experiments/live/replay_all.sh $c/holdout .dev/faultline >$c/holdout.log 2>&1
echo "holdout: $SECONDS s"
timeout $((545 - SECONDS)) .dev/migration_mix .dev/libfaultline_live.so 256 3 >$c/mix.txt 2>&1
echo "mix: $SECONDS s"; cat $c/mix.txt
ls $c/runs $c/holdout | grep -c json
tar -C $c -czf $OUT/c.tgz .
