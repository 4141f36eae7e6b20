#!/usr/bin/env bash
# Device call M (session 2026-11-28 18:04): on the instance of calls K and L (still warm, its
# calibration in /root/k/profile), timed replays of the first hold-out set then the second at 75%
# and 50% under the four policies, into /root/k/holdout, tarred into $OUT.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; limit=${LIMIT:-540}
pack() { tar czf $OUT/m.tmp.tgz -C /root k/holdout k/holdout.log k/machine-call.txt && mv $OUT/m.tmp.tgz $OUT/m.tgz; }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
for dir in h200-holdout-traces h200-holdout2-traces; do
  TRACE_DIR=experiments/live/data/$dir BUDGETS="0.75 0.5" STOP_AFTER=$((limit - 40 - SECONDS)) \
    experiments/live/replay_all.sh $o/holdout .dev/faultline >> $o/holdout.log 2>&1
  pack
done
cat $o/holdout.log | tail -30
