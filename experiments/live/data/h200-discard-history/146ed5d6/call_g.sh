#!/usr/bin/env bash
# Device call G (session 2026-11-27 18:08): the discard-history probe.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/g; mkdir -p $o
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total,driver_version --format=csv > $o/machine-call.txt 2>&1
for b in 256 1024; do timeout 200 .dev/discard_history $PWD/.dev/libfaultline_live.so $b >> $o/discard_history.txt 2>&1; done
cat $o/discard_history.txt
