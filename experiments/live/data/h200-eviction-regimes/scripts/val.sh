#!/usr/bin/env bash
# .dev/val.sh (sampled/): the calibration with eviction samples on a fresh instance, then
# per-kernel replays of ondemand, the oracle and pump at 50%.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
c=/tmp/v-$u; mkdir -p $c
experiments/live/campaign.sh $c calibrate; echo "calibrated t=$SECONDS"
PER_KERNEL=1 TRACES="resnet50 pagerank t5-base" POLICIES="ondemand oracle pump" BUDGETS='0.5' \
  STOP_AFTER=$((205 - SECONDS)) experiments/live/replay_all.sh $c .dev/faultline >$c/replay.log 2>&1
python3 experiments/live/call_costs.py $(ls $c/*.json | grep -v manifest) --json $c/calls.json >/dev/null 2>&1
python3 - $c <<'PY'
import json,glob,sys
for f in glob.glob(sys.argv[1]+'/*.json'):
  d=json.load(open(f))
  if isinstance(d,dict) and 'kernels' in d: d.pop('kernels'); json.dump(d,open(f,'w'))
PY
tar -C /tmp -czf $OUT/v.tgz v-$u
