#!/usr/bin/env bash
# Does CUPTI's unified-memory instrumentation slow the fault path that calibrations measure?
# The quick calibration twice on one instance (counters on: the default; off:
# FAULTLINE_LIVE_CUPTI=0), then one hold-out program alone and under `faultline run` under
# ondemand at 75% with and without --per-kernel. Usage: .fp/cupti.sh SECONDS (after
# `experiments/campaign.sh stage`; results gzip-split into $OUT).
set -u
limit=$1
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
m=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/cupti; mkdir -p $o
{ git rev-parse HEAD; nvidia-smi --query-gpu=name,uuid,memory.total,memory.used,driver_version --format=csv; date -u; } > $o/machine.txt 2>&1
.dev/faultline calibrate --name "$m-$u" --from "$m" --out-dir $o/on > $o/on.log 2>&1; echo "on: $SECONDS s"
FAULTLINE_LIVE_CUPTI=0 .dev/faultline calibrate --name "$m-$u" --from "$m" --out-dir $o/off > $o/off.log 2>&1; echo "off: $SECONDS s"
# The program campaign's own steps for one program (capture reused from .fp/diffusion.fltrace if carried)
STOP_AFTER=$((limit - 120)) REPEATS=2 STEPS=6 RUN_TIMEOUT=90 BUDGETS=0.75 REPLAYS=0 POLICIES=ondemand \
  PER_KERNEL_POLICIES=ondemand timeout $((limit - 30)) experiments/campaign.sh program $o/prog longctx 2>&1 | tail -5
tar czf - -C out cupti | split -b 15M - "$OUT/cupti.tgz."
ls -la "$OUT"
