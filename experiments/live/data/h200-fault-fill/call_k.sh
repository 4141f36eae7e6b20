#!/usr/bin/env bash
# Device call K (session 2026-11-29 03:28): fault_shape's groups mode (the driver's batches as
# CUPTI's fault records show them) at 1024 and 256 blocks, then the fill mode again at 1024.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; mkdir -p $o
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
.dev/fault_shape $PWD/.dev/libfaultline_live.so groups 1024 > $o/fault_groups_1024.txt 2>&1
echo "groups 1024 at $SECONDS s" >> $o/host.txt; cp $o/*.txt $OUT/
.dev/fault_shape $PWD/.dev/libfaultline_live.so groups 256 > $o/fault_groups_256.txt 2>&1
echo "groups 256 at $SECONDS s" >> $o/host.txt; cp $o/*.txt $OUT/
.dev/fault_shape $PWD/.dev/libfaultline_live.so fill 1024 > $o/fault_fill3_1024.txt 2>&1
echo "fill 1024 at $SECONDS s" >> $o/host.txt; cp $o/*.txt $OUT/
cat $o/*.txt
