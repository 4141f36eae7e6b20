#!/usr/bin/env bash
# Issue 21 item 3 diagnosis: why pump and the oracle run faster in the simulator than live.
# The migration-mix probe (the calls in the orders the policies issue them, against the
# calibration's calls of one kind in a row), then per-kernel replays whose rows count each
# kernel's migration calls and their CPU time, for experiments/live/call_cost_fit.py.
#   experiments/live/diag_prefetch.sh OUT_DIR [BIN_DIR]
# TRACES, POLICIES and BUDGETS as replay_all.sh (defaults below); BIN_DIR holds faultline,
# migration_mix and libfaultline_live.so (default .dev, staged by stage_device.sh).
set -u
out=${1:?usage: diag_prefetch.sh OUT_DIR [BIN_DIR]}
bin=${2:-.dev}
mkdir -p "$out"
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader >"$out/machine.txt"
"$bin/migration_mix" "$bin/libfaultline_live.so" 256 5 >"$out/migration_mix.txt" 2>&1
cat "$out/migration_mix.txt"
TRACES=${TRACES:-"resnet50 gpt2-small bert-large"} POLICIES=${POLICIES:-"pump oracle ondemand"} \
  BUDGETS=${BUDGETS:-"0.75 0.5"} PER_KERNEL=1 experiments/live/replay_all.sh "$out/runs" "$bin/faultline"
