#!/usr/bin/env bash
# DeepUM's evaluation shape (ASPLOS '23) in the simulator: Fig. 9(b) (seconds per 100 iterations,
# UM against DeepUM, three oversubscriptions per model) on the V100 32 GB profile, the ablation
# (prefetching / + pre-eviction / + invalidation), the same on our calibrated H100 and H200, and
# the two sweeps that explain where we differ from the paper (the fault path's cost; the prefetch
# queue). Makes the DLRM-like and sliding-window synthetic traces in out/papers/deepum/, runs the
# sweeps configs/sweeps/deepum-*.json (10 steps each), then report.py: deepum.md, deepum.png and
# claims.json in out/papers/deepum/, or with --write-reports in experiments/papers/deepum/reports/
# and the claims in experiments/papers/deepum/claims.json.
#   experiments/papers/deepum/run.sh [--write-reports] [--jobs N]    (the sweeps on N threads)
set -euo pipefail
cd "$(dirname "$0")/../../.."
paper=deepum
source experiments/papers/preamble.sh
mkdir -p out/papers/deepum "$out"
# DLRM's embedding lookups: kernels touching random 64 KB pages, new ones every step.
build/faultline synth --pattern random --footprint 8G --iterations 10 --kernels 32 \
  --ns-per-access 2000 --seed 7 --out out/papers/deepum/dlrm-like.fltrace >/dev/null
# One kernel, one execution ID, over a moving window (a sliding-window stencil).
build/faultline synth --pattern window --footprint 4G --iterations 3 --kernels 64 \
  --ns-per-access 20000 --out out/papers/deepum/window.fltrace >/dev/null
for s in fig9 gpus fault-path queue; do
  build/faultline sweep "configs/sweeps/deepum-$s.json" "$@"
done
exec "$python" "$here/report.py" out/sweeps "$out" --claims "$claims"
