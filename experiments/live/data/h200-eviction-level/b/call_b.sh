#!/usr/bin/env bash
# Device call B (session 2026-11-29 22:20): the eviction level beside the CPU the thread ran on,
# the CPU's own speed and steal time; unpinned, then pinned to CPU 3, to CPU 11, unpinned.
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
{ date -u; uptime; cat /sys/module/page_reporting/parameters/reported_kib /sys/module/page_reporting/parameters/passes; head -1 /proc/stat; } > $O/machine_b.txt 2>&1
.dev/probes/eviction_level 60 64 -1 > $O/b1-unpinned.txt 2>&1
.dev/probes/eviction_level 40 64 3 > $O/b2-cpu3.txt 2>&1
.dev/probes/eviction_level 40 64 11 > $O/b3-cpu11.txt 2>&1
.dev/probes/eviction_level 40 64 -1 > $O/b4-unpinned.txt 2>&1
{ date -u; cat /sys/module/page_reporting/parameters/reported_kib /sys/module/page_reporting/parameters/passes; grep -E "^cpu" /proc/stat; } >> $O/machine_b.txt 2>&1
