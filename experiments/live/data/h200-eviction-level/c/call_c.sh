#!/usr/bin/env bash
# Device call C (session 2026-11-29 22:20): where the GPU driver runs (the guest's kernel or the
# host's, behind a proxy), and the eviction level beside every page allocator counter.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
{
  date -u; uptime
  echo "== modules"; cat /proc/modules 2>&1 | head -40
  echo "== /dev/nvidia*"; ls -la /dev/nvidia* 2>&1
  echo "== /proc/driver/nvidia"; ls /proc/driver/nvidia 2>&1; cat /proc/driver/nvidia/version 2>&1
  echo "== /sys/module nvidia*"; ls -d /sys/module/nvidia* 2>&1
  echo "== nvproxy"; ls -la /sys/bus/virtio/drivers/nvproxy 2>&1
  echo "== dmesg nvidia/nvproxy"; dmesg 2>&1 | grep -i -E "nvidia|nvproxy|uvm" | head -30
  echo "== buddyinfo"; cat /proc/buddyinfo
  echo "== zoneinfo zones"; grep -E "^Node|present|managed" /proc/zoneinfo | head -20
} > $O/machine_c.txt 2>&1
.dev/probes/eviction_level 45 64 -1 > $O/c1.txt 2>&1
cat /proc/buddyinfo >> $O/machine_c.txt
