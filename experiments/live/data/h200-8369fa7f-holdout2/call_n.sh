#!/usr/bin/env bash
# Device call N (session 2026-11-28 18:04): on the instance of calls K-M (still warm, its
# calibration in /root/k/profile), timed replays of the third hold-out set (vit, bfs, lstm) at
# 75% and 50% under the four policies, into /root/k/holdout3, tarred into $OUT.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/k; limit=${LIMIT:-470}
pack() { tar czf $OUT/n.tmp.tgz -C /root k/holdout3 k/holdout3.log && mv $OUT/n.tmp.tgz $OUT/n.tgz; }
for t in vit bfs lstm; do
  TRACE_DIR=experiments/live/data/h200-holdout3-traces TRACES=$t BUDGETS="0.75 0.5" \
    STOP_AFTER=$((limit - 40 - SECONDS)) experiments/live/replay_all.sh $o/holdout3 .dev/faultline >> $o/holdout3.log 2>&1
  pack
done
tail -24 $o/holdout3.log
