#!/usr/bin/env bash
# .dev/diag.sh: what the GPU holds when the replay evicts (issue 21 item 4) and whether a
# prefetch revives discarded pages (item 3, DeepUM): the residency probe's two modes, then
# ondemand replays at 75% with --eviction-bytes (each budget eviction's bytes back beside the
# pages the books hold).
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
c=/tmp/b-$u; mkdir -p $c
nvidia-smi --query-gpu=name,uuid,driver_version,memory.total --format=csv > $c/machine.txt
git rev-parse HEAD >> $c/machine.txt
timeout 150 .dev/residency_probe .dev/libfaultline_live.so density 128 > $c/density.txt 2>&1
echo "density t=$SECONDS"; cat $c/density.txt
timeout 120 .dev/residency_probe .dev/libfaultline_live.so revive 128 > $c/revive.txt 2>&1
echo "revive t=$SECONDS"; cat $c/revive.txt
for t in stream strided moe resnet50 bert-large; do
  [ $SECONDS -gt ${STOP:-480} ] && break
  timeout $((560 - SECONDS)) .dev/faultline replay --trace traces/real/$t.fltrace --policy ondemand \
    --budget 0.75 --eviction-bytes --out $c/$t-ondemand-0.75.json > $c/$t.log 2>&1
  echo "$t t=$SECONDS rc=$?"
done
tar -C /tmp -czf $OUT/b.tgz b-$u
