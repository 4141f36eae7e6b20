#!/usr/bin/env bash
# Device call A (session 2026-11-29 22:20): the eviction level through time, beside the link's
# copies, the host's page hand-out and the GPU's clocks and PCIe link.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
{
  date -u; uname -a; cat /proc/cmdline; nproc; uptime
  nvidia-smi --query-gpu=name,uuid,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv
  grep -E "MemTotal|MemFree|MemAvailable|AnonHugePages|HugePages_Total" /proc/meminfo
  for f in /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; do echo "$f: $(cat $f)"; done
  echo "page_reporting:"; ls /sys/module/page_reporting/parameters 2>&1; cat /sys/module/page_reporting/parameters/* 2>&1
  echo "virtio:"; for d in /sys/bus/virtio/devices/*; do echo "$d device=$(cat $d/device 2>/dev/null) driver=$(basename $(readlink $d/driver) 2>/dev/null) features=$(cat $d/features 2>/dev/null)"; done
  ls /sys/bus/virtio/drivers 2>&1
  echo "memory blocks: $(ls -d /sys/devices/system/memory/memory* 2>/dev/null | wc -l) online=$(cat /sys/devices/system/memory/memory*/online 2>/dev/null | grep -c 1)"
  dmesg 2>&1 | grep -i -E "balloon|virtio_mem|virtio-mem|page_report|hotplug" | head -20
  lscpu | head -25
} > $O/machine.txt 2>&1
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,pcie.link.gen.current,pcie.link.width.current,power.draw,temperature.gpu --format=csv -lms 500 > $O/smi.csv 2>&1 &
SMI=$!
date -u +%s.%N > $O/start.txt
.dev/probes/eviction_level 170 64 > $O/level1.txt 2>&1
echo "rc=$?" >> $O/level1.txt
kill $SMI
grep -E "MemTotal|MemFree|MemAvailable" /proc/meminfo >> $O/machine.txt
