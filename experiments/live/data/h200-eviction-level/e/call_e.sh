#!/usr/bin/env bash
# Device call E (session 2026-11-29 22:20): does the level slow DMA more where each copy lands in
# host memory the last ones did not touch (2 MB slots spread over 32 GB of pinned memory), as it
# would if the host's translation of the VM's memory (the IOMMU's and EPT's walks) is what slows?
set -u
O=${OUT:-/tmp/out}; mkdir -p $O
{ date -u; uptime; nvidia-smi --query-gpu=name,uuid --format=csv,noheader; } > $O/machine_e.txt 2>&1
.dev/probes/eviction_level 120 64 -1 32 > $O/e1-far32.txt 2>&1
echo "rc=$?" >> $O/e1-far32.txt
