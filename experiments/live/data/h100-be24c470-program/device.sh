#!/usr/bin/env bash
# Hold-out set 7 (pointcloud speech field), captured and run inside `faultline run`.
set -u
limit=$1
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/set7-$u; mkdir -p $o/prog
STOP_AFTER=$((limit - SECONDS - 75)) REPEATS=1 STEPS=10 RUN_TIMEOUT=90 BUDGETS="0.75" REPLAYS=0 \
  POLICIES="ondemand schedule oracle pump deepum" PER_KERNEL_POLICIES= \
  timeout $((limit - SECONDS - 30)) experiments/campaign.sh program $o/prog pointcloud speech field 2>&1 | tail -40
tar czf - -C out "set7-$u" | split -b 15M - "$OUT/set7.tgz."
ls -la "$OUT"; echo "total $SECONDS s"
