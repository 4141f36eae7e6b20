#!/usr/bin/env bash
# Hold-out set 6 inside the programs, and a full calibration (CUPTI's counters off) of this
# instance. Usage: .fp/set6.sh SECONDS FULL(0|1) (after `experiments/campaign.sh stage`;
# results gzip-split into $OUT). Resumes from out/set6 if the machine kept it.
set -u
limit=$1 full=$2
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
m=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/set6-$u; mkdir -p $o/full
if [ "$full" = 1 ] && [ ! -f $o/full/gpus/$m-$u-full.json ]; then
  { git rev-parse HEAD; nvidia-smi --query-gpu=name,uuid,memory.total,memory.used,driver_version --format=csv; date -u; } > $o/full/machine.txt 2>&1
  timeout 300 .dev/faultline calibrate --name "$m-$u-full" --base "$m" --out-dir $o/full > $o/full/calibrate.log 2>&1
  echo "full calibration: $SECONDS s, rc $?"; tail -3 $o/full/calibrate.log
fi
[ -d $o/prog ] || export CAPTURES=$PWD/out/set6-7095b3b2/prog
echo "campaign folder $o/prog $(ls $o/prog 2>/dev/null | wc -l) files; CAPTURES=${CAPTURES:-}"
STOP_AFTER=$((limit - SECONDS - 100)) REPEATS=${REPEATS:-2} STEPS=10 RUN_TIMEOUT=90 BUDGETS=${BUDGETS:-"0.75 0.5"} REPLAYS=0 \
  PER_KERNEL_POLICIES=${PER_KERNEL_POLICIES-ondemand} timeout $((limit - SECONDS - 25)) experiments/campaign.sh program $o/prog ${PROGRAMS:-gan video ssm} 2>&1 | tail -40
tar czf - -C out "set6-$u" | split -b 15M - "$OUT/set6.tgz."
ls -la "$OUT"
