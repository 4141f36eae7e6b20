#!/usr/bin/env bash
# Device call Z (session 2026-11-29 14:46): how much a per-machine calibration's costs move
# between calibrations of one instance minutes apart, at the default 5 repeats a point and at
# 15. On a fresh H200: campaign.sh calibrate (warm-up replay, at1), then in turn a calibration
# with --repeats 15 (r15/PROFILE-r15-K) and campaign.sh recalibrate (at2..at4), four of each.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/z; mkdir -p $o/r15
FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
echo "at1 $SECONDS s" >> $o/host.txt
p=$(cat $o/profile.txt)
for k in 1 2 3 4; do
  began=$SECONDS
  .dev/faultline calibrate --name "$p-r15-$k" --from h200 --repeats 15 --out-dir $o/r15 \
    >> $o/r15/calibrate.log 2>&1 || echo "r15-$k failed: $(tail -1 $o/r15/calibrate.log)"
  echo "r15-$k $((SECONDS - began)) s (at $SECONDS)" >> $o/host.txt
  [ $k -lt 4 ] && experiments/live/campaign.sh $o recalibrate >> $o/calibrate-stage.log 2>&1
  echo "recalibrated $SECONDS s" >> $o/host.txt
  [ $SECONDS -gt 480 ] && break
done
tar czf $OUT/z.tgz -C /root z
cat $o/host.txt; grep -h "fault benchmarks\|failed" $o/calibrate.log $o/r15/calibrate.log | tail -4
