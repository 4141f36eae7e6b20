#!/usr/bin/env bash
# .dev/diag3.sh: is the missing DtoH the GPU's or CUPTI's? stream ondemand 75% with each eviction
# waited for (sync) or CUPTI drained after it (flush), then resnet50 with --eviction-bytes.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
c=/tmp/b3-$u; mkdir -p $c
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv > $c/machine.txt
for mode in sync flush none; do
  FAULTLINE_LIVE_AFTER_EVICT=$mode timeout 200 .dev/faultline replay --trace traces/real/stream.fltrace \
    --policy ondemand --budget 0.75 --out $c/stream-$mode.json > $c/stream-$mode.log 2>&1
  echo "stream $mode t=$SECONDS"
done
FAULTLINE_LIVE_AFTER_EVICT=sync timeout 100 .dev/faultline replay --trace traces/real/resnet50.fltrace \
    --policy ondemand --budget 0.75 --out $c/resnet50-sync.json > $c/resnet50-sync.log 2>&1
echo "resnet50 sync t=$SECONDS"
timeout $((560 - SECONDS)) .dev/faultline replay --trace traces/real/resnet50.fltrace --policy ondemand \
  --budget 0.75 --eviction-bytes --out $c/resnet50-eb.json > $c/resnet50-eb.log 2>&1
echo "resnet50 eviction-bytes t=$SECONDS rc=$?"
tar -C /tmp -czf $OUT/b3.tgz b3-$u
