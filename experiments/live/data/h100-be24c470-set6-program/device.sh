#!/usr/bin/env bash
# Hold-out set 6 inside `faultline run` with the migrations' GPU time measured
# (results.migration_gpu_ns), on a fresh instance. Usage: .fp/mig.sh SECONDS (after
# `experiments/campaign.sh stage`; results gzip-split into $OUT).
set -u
limit=$1
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/mig-$u; mkdir -p $o/prog
export CAPTURES=$PWD/.fp/cap
# The seventh hold-out set, alone, a smoke test of its size and step time.
for p in pointcloud speech field; do
  [ $SECONDS -lt $((limit - 300)) ] || break
  timeout 60 python3 experiments/workloads.py train $p --warmup 1 --steps 3 > $o/$p.smoke.log 2>&1
  echo "$p smoke: rc $? at $SECONDS s: $(tail -c 400 $o/$p.smoke.log)"
done
STOP_AFTER=$((limit - SECONDS - 60)) REPEATS=1 STEPS=10 RUN_TIMEOUT=90 BUDGETS="0.75" REPLAYS=0 \
  POLICIES="ondemand pump oracle schedule" PER_KERNEL_POLICIES= \
  timeout $((limit - SECONDS - 30)) experiments/campaign.sh program $o/prog video gan ssm 2>&1 | tail -40
tar czf - --exclude='*.fltrace' -C out "mig-$u" | split -b 15M - "$OUT/mig.tgz."
ls -la "$OUT"; echo "total $SECONDS s"
