#!/usr/bin/env bash
# Device call F (session 2026-11-29 22:20): does the level slow the interrupt that wakes a thread
# sleeping on the GPU (an empty kernel waited for by sleeping, against by spinning)?
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
{ date -u; uptime; nvidia-smi --query-gpu=name,uuid --format=csv,noheader; } > $O/machine_f.txt 2>&1
.dev/probes/eviction_level 120 64 -1 0 1 > $O/f1-wake.txt 2>&1
echo "rc=$?" >> $O/f1-wake.txt
