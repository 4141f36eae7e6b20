#!/usr/bin/env bash
# .dev/diag2.sh (second-instance/): does an eviction cost more as more chunks go in a row?
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
c=/tmp/c2; mkdir -p $c
nvidia-smi -L
for n in 256 2048 256 6144 256; do
  echo "== evict mode, $n blocks"; .dev/migration_mix .dev/libfaultline_live.so $n 3 evict
  echo "t=$SECONDS"
done 2>&1 | tee $c/evict-sizes.txt
PER_KERNEL=1 TRACES="resnet50" POLICIES="ondemand oracle" BUDGETS="0.5" \
  experiments/live/replay_all.sh $c/runs .dev/faultline >$c/runs.log 2>&1
echo "runs t=$SECONDS"
for n in 256 6144; do
  echo "== after the replays: evict mode, $n blocks"; .dev/migration_mix .dev/libfaultline_live.so $n 3 evict
done 2>&1 | tee -a $c/evict-sizes.txt
.dev/faultline calibrate --name after --from h200 --out-dir $c/profile-after >$c/cal.log 2>&1
tar -C $c -czf $OUT/c2.tgz .
