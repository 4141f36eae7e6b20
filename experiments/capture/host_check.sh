#!/usr/bin/env bash
# The host-initialised program on a GPU machine, three ways, for the check that a trace carries
# what the CPU does to managed memory (tracer/README.md, "Host accesses"):
#   1. the original program under observe mode: CUPTI's migration counters while it runs;
#   2. the live replay of its trace (traces/real/host-stencil.fltrace) under ondemand at 100% of
#      its footprint (each kernel touches all of it, so a smaller budget is refused);
#   3. live replays for 6 iterations of traces that hold 3 steps, the live side of --iterations:
#      stream under ondemand at 100%, pagerank under ondemand and deepum at 60% (at 50% one of its
#      kernels needs more than the budget).
#   experiments/capture/host_check.sh OUT_DIR     (after experiments/capture/stage_device.sh)
set -uo pipefail
out=${1:?usage: host_check.sh OUT_DIR}
mkdir -p "$out"
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$bin/faultline" capture --mode observe --range profiler --out "$out/host-stencil.observe.json" \
  -- "$bin/host_stencil" --mib 3072 --steps 3 --sweeps 6
"$bin/faultline" replay --trace traces/real/host-stencil.fltrace --policy ondemand --budget 1.0 \
  --out "$out/host-stencil-ondemand-1.0.json" || echo "host-stencil failed"
"$bin/faultline" replay --trace traces/real/stream.fltrace --policy ondemand --budget 1.0 \
  --iterations 6 --out "$out/stream-ondemand-1.0-iter6.json" || echo "stream iterations failed"
for p in ondemand deepum; do
  timeout 240 "$bin/faultline" replay --trace traces/real/pagerank.fltrace --policy $p \
    --budget 0.6 --iterations 6 --out "$out/pagerank-$p-0.6-iter6.json" || echo "pagerank $p failed"
done
