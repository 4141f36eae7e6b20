#!/usr/bin/env bash
# Hold-out set 6 inside `faultline run`, kernel ends heard at the next call (ordered after their
# kernel), then recsys's runs that stopped on an illegal access before that fix. Usage:
# .fp/ends2.sh SECONDS (after `experiments/campaign.sh stage`; results gzip-split into $OUT).
set -u
limit=$1
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/ends2-$u; mkdir -p $o/prog $o/recsys
export CAPTURES=$PWD/.fp/cap
STOP_AFTER=$((limit - SECONDS - 90)) REPEATS=1 STEPS=10 RUN_TIMEOUT=90 BUDGETS="0.75 0.5" REPLAYS=0 \
  POLICIES="schedule deepum ondemand oracle pump" PER_KERNEL_POLICIES= \
  timeout $((limit - SECONDS - 45)) experiments/campaign.sh program $o/prog gan video ssm 2>&1 | tail -40
for run in "deepum 0.75" "schedule 0.5"; do
  set -- $run
  [ $SECONDS -lt $((limit - 45)) ] || break
  timeout 40 .dev/faultline run --policy $1 --budget $2 --trace .fp/cap/recsys.fltrace --torch \
    --out $o/recsys/recsys-$1-$2.json -- python3 experiments/workloads.py train recsys --warmup 1 --steps 10 \
    > $o/recsys/recsys-$1-$2.log 2>&1
  echo "recsys $1 $2: rc $? at $SECONDS s"
done
tar czf - --exclude='*.fltrace' -C out "ends2-$u" | split -b 15M - "$OUT/ends2.tgz."
ls -la "$OUT"; echo "total $SECONDS s"
