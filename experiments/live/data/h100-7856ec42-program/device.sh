#!/usr/bin/env bash
# The busy-core calibration judged on a fresh instance: the campaign's quick calibration (one host
# core kept busy, the new default) and an idle one beside it (--busy-cores 0), then hold-out
# set 6 inside `faultline run` (five policies at 75%), then set 7 as far as time allows.
# Usage: .fp/val.sh SECONDS (after `experiments/campaign.sh stage`; results gzip-split into $OUT).
set -u
limit=$1
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
o=out/val-$u; mkdir -p $o/prog $o/idle
.dev/faultline calibrate --name "$model-$u-idle" --from "$model" --busy-cores 0 \
  --out-dir $o/idle/profile >$o/idle/calibrate.log 2>&1
echo "idle calibration: rc $? at $SECONDS s: $(grep 'fault benchmarks' $o/idle/calibrate.log)"
for set in "gan ssm video" "pointcloud speech field"; do
  CAPTURES=$PWD/.fp/cap STOP_AFTER=$((limit - SECONDS - 40)) REPEATS=1 STEPS=10 \
    RUN_TIMEOUT=60 BUDGETS="0.75" REPLAYS=0 PER_KERNEL_POLICIES= \
    POLICIES="ondemand pump deepum schedule oracle" \
    timeout $((limit - SECONDS - 20)) experiments/campaign.sh program $o/prog $set 2>&1 | tail -20
  grep 'fault benchmarks' $o/prog/calibrate.log
done
tar czf - --exclude='*.fltrace' -C out "val-$u" | split -b 15M - "$OUT/val.tgz."
ls -la "$OUT"; echo "total $SECONDS s"
