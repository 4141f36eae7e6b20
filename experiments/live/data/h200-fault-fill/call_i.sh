#!/usr/bin/env bash
# Device call I (session 2026-11-29 03:28): fault_shape's fill mode (pages faulted beside pages
# the GPU holds, the density prefetcher filling the block) at 1024 and 256 blocks.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
.dev/fault_shape $PWD/.dev/libfaultline_live.so fill 1024 > $o/fault_fill_1024.txt 2>&1
echo "1024 at $SECONDS s" >> $o/host.txt; cp $o/*.txt $OUT/
.dev/fault_shape $PWD/.dev/libfaultline_live.so fill 256 > $o/fault_fill_256.txt 2>&1
echo "256 at $SECONDS s" >> $o/host.txt; cp $o/*.txt $OUT/
cat $o/*.txt
