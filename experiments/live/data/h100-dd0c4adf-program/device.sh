#!/usr/bin/env bash
# Hold-out programs inside `faultline run` with kernel ends heard at the launch (the default now).
# Usage: .fp/ends.sh SECONDS (after `experiments/campaign.sh stage`; PROGRAMS, POLICIES, BUDGETS,
# EXTRA=1 for schedule at 75% with --kernel-ends gpu on video; results gzip-split into $OUT).
set -u
limit=$1
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/ends-$u; mkdir -p $o/prog
export CAPTURES=$PWD/.fp/cap
STOP_AFTER=$((limit - SECONDS - 120)) REPEATS=1 STEPS=10 RUN_TIMEOUT=90 BUDGETS=${BUDGETS:-"0.75 0.5"} REPLAYS=0 \
  PER_KERNEL_POLICIES= timeout $((limit - SECONDS - 60)) experiments/campaign.sh program $o/prog ${PROGRAMS:-gan video ssm} 2>&1 | tail -40
if [ "${EXTRA:-0}" = 1 ] && [ $SECONDS -lt $((limit - 80)) ] && [ ! -f $o/prog/video-schedule-0.75.gpu.json ]; then
  timeout 60 .dev/faultline run --kernel-ends gpu --policy schedule --budget 0.75 --trace $o/prog/video.fltrace --torch \
    --out $o/prog/video-schedule-0.75.gpu.json -- python3 experiments/workloads.py train video --warmup 1 --steps 10 > $o/prog/video-schedule-0.75.gpu.log 2>&1
  echo "extra: rc $? at $SECONDS s"
fi
rm -f $o/prog/*.fltrace.tmp
tar czf - --exclude='*.fltrace' -C out "ends-$u" | split -b 15M - "$OUT/ends.tgz."
ls -la "$OUT"; echo "total $SECONDS s"
