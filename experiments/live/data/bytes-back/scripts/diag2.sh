#!/usr/bin/env bash
# .dev/diag2.sh: the residency probe's threshold mode; then ondemand (and DeepUM) replays at 75%
# with CUPTI's page-fault records left out (FAULTLINE_LIVE_FAULT_RECORDS=0) and, for some, with
# them (the default until then): whether the fault records crowd the byte counters out.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
c=/tmp/b2-$u; mkdir -p $c/norec $c/rec
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv > $c/machine.txt
for n in 1 16; do timeout 60 .dev/residency_probe .dev/libfaultline_live.so threshold $n; done > $c/threshold.txt 2>&1
echo "threshold t=$SECONDS"; cat $c/threshold.txt
run() { # DIR TRACE POLICY [env]
  timeout $((570 - SECONDS)) env $4 .dev/faultline replay --trace traces/real/$2.fltrace --policy $3 \
    --budget 0.75 --out $c/$1/$2-$3-0.75.json > $c/$1/$2-$3.log 2>&1
  echo "$1 $2 $3 t=$SECONDS rc=$?"
}
for t in stream strided moe resnet50 bert-large; do run norec $t ondemand FAULTLINE_LIVE_FAULT_RECORDS=0; done
for t in stream moe resnet50; do run rec $t ondemand X=1; done
for t in resnet50 bert-large moe; do [ $SECONDS -gt 470 ] && break; run norec $t deepum FAULTLINE_LIVE_FAULT_RECORDS=0; done
for t in gpt2-small t5-base; do [ $SECONDS -gt 500 ] && break; run norec $t ondemand FAULTLINE_LIVE_FAULT_RECORDS=0; done
tar -C /tmp -czf $OUT/b2.tgz b2-$u
