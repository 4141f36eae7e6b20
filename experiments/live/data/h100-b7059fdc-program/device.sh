#!/usr/bin/env bash
# The quick calibration at two moments (the fastest kept, the new default) judged on a fresh
# instance: hold-out set 7 inside `faultline run` at 75%, as far as time allows.
# Usage: .fp/val2.sh SECONDS (after `experiments/campaign.sh stage`; results gzip-split into $OUT).
set -u
limit=$1
SECONDS=0
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/val2-$u; mkdir -p $o/prog
CAPTURES=$PWD/.fp/cap STOP_AFTER=$((limit - 25)) REPEATS=1 STEPS=10 RUN_TIMEOUT=40 \
  BUDGETS="0.75" REPLAYS=0 PER_KERNEL_POLICIES= POLICIES="ondemand pump schedule deepum oracle" \
  timeout $((limit - 12)) experiments/campaign.sh program $o/prog pointcloud speech 2>&1 | tail -20
cat $o/prog/calibrate.log
tar czf - --exclude='*.fltrace' -C out "val2-$u" | split -b 15M - "$OUT/val2.tgz."
echo "total $SECONDS s"
