#!/usr/bin/env bash
# .dev/diag4.sh: replays with CUPTI drained after every kernel (--drain-counters, off the
# clock): stream and resnet50 ondemand 75% first (their exact bytes are known from
# --eviction-bytes), then ondemand and DeepUM runs of the other traces while time lasts.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
c=/tmp/b4-$u; mkdir -p $c
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv > $c/machine.txt
run() { # TRACE POLICY BUDGET
  [ $SECONDS -gt ${STOP:-500} ] && return
  local s=$SECONDS
  timeout $((580 - SECONDS)) .dev/faultline replay --trace traces/real/$1.fltrace --policy $2 \
    --budget $3 --drain-counters --out $c/$1-$2-$3.json > $c/$1-$2-$3.log 2>&1
  echo "$1 $2 $3 rc=$? wall=$((SECONDS - s)) t=$SECONDS"
}
run stream ondemand 0.75
run resnet50 ondemand 0.75
for t in bert-large moe t5-base pagerank gpt2-small; do run $t ondemand 0.75; done
for t in resnet50 bert-large moe t5-base pagerank; do run $t deepum 0.75; done
for t in resnet50 bert-large moe; do run $t ondemand 0.5; run $t deepum 0.5; done
tar -C /tmp -czf $OUT/b4.tgz b4-$u
