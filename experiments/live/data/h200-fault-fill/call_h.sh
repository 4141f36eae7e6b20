#!/usr/bin/env bash
# Device call H (session 2026-11-29 03:28): fault_shape's steps mode (every step-th 64 KB page of
# each block, from the host or evicted by 2 MB calls, block and strided order) at 1024 and 256
# blocks: what a scattered run of pages costs the fault path.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
.dev/fault_shape $PWD/.dev/libfaultline_live.so steps 1024 > $o/fault_steps_1024.txt 2>&1
echo "1024 at $SECONDS s" >> $o/host.txt; cp $o/*.txt $OUT/
.dev/fault_shape $PWD/.dev/libfaultline_live.so steps 256 > $o/fault_steps_256.txt 2>&1
echo "256 at $SECONDS s" >> $o/host.txt; cp $o/*.txt $OUT/
cat $o/*.txt
