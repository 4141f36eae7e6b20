#!/usr/bin/env bash
# The host-initialised program on a GPU machine, three ways, for the check that a trace carries
# what the CPU does to managed memory (tracer/README.md, "Host accesses"):
#   1. the original program under observe mode: CUPTI's migration counters while it runs;
#   2. the live replay of its trace (traces/real/host-stencil.fltrace) under ondemand at 100% and
#      50% of its footprint;
#   3. the live replay of the stream microbenchmark for 6 iterations (its trace holds 3 steps),
#      the live side of --iterations.
#   experiments/capture/host_check.sh OUT_DIR     (after experiments/capture/stage_device.sh)
set -uo pipefail
out=${1:?usage: host_check.sh OUT_DIR}
mkdir -p "$out"
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$bin/faultline" capture --mode observe --range profiler --out "$out/host-stencil.observe.json" \
  -- "$bin/host_stencil" --mib 3072 --steps 3 --sweeps 6
for b in 1.0 0.5; do
  "$bin/faultline" replay --trace traces/real/host-stencil.fltrace --policy ondemand --budget "$b" \
    --out "$out/host-stencil-ondemand-$b.json" || echo "host-stencil $b failed"
done
"$bin/faultline" replay --trace traces/real/stream.fltrace --policy ondemand --budget 0.5 \
  --iterations 6 --out "$out/stream-ondemand-0.5-iter6.json" || echo "stream iterations failed"
