#!/usr/bin/env bash
# Device call C (session 2026-11-27 15:23): the fault-shape probe (order x origin x size), then
# this instance calibrated per machine and in full, with the strided fault points.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=$OUT/c; mkdir -p $o
pack() { tar czf $OUT/c.tmp.tgz -C $OUT c && mv $OUT/c.tmp.tgz $OUT/c.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total,driver_version --format=csv > $o/machine-call.txt 2>&1
.dev/fault_shape .dev/libfaultline_live.so ${SIZES:-512 2048} > $o/fault_shape.txt 2>&1
echo "probe done at $SECONDS s" >> $o/host.txt; pack
FULL=1 experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "calibrated at $SECONDS s" >> $o/host.txt; pack
cat $o/host.txt $o/fault_shape.txt; tail -4 $o/calibrate.log $o/calibrate-stage.log
