#!/usr/bin/env bash
# GMLake (ASPLOS '24) at the paper's scale, in the simulator, from the allocation histories
# captured on one H200 (experiments/alloc/data/h200-large, h200-large-batches):
#   experiments/papers/gmlake/run.sh [--write-reports]
# 1. every history through faultline's caching, expandable and GMLake models
#    (configs/alloc/default.json): saved GB and fragmentation points per run;
# 2. the sweep that explains the gap to the paper's numbers: the batch series is in the data;
#    GMLake's fragLimit swept over the 7B LRO histories (32 MiB to 1 GiB);
# then report.py: the table beside the paper's numbers, the figure and claims.json in
# out/papers/gmlake/, or with --write-reports in experiments/papers/gmlake/reports/ and
# experiments/papers/gmlake/claims.json. About a minute on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../../.."
paper=gmlake
args=("$@")
source experiments/papers/preamble.sh
out=out/papers/gmlake # the simulations; report.py places the reports (it takes --write-reports)
mkdir -p "$out/sim" "$out/fraglimit/configs"
for t in experiments/alloc/data/h200-large/snapshots/*.pickle.zst \
         experiments/alloc/data/h200-large-batches/snapshots/*.pickle.zst; do
  name=$(basename "$t" .pickle.zst)
  build/faultline alloc run --history "$t" --config configs/alloc/default.json \
    --out "$out/sim/$name.json"
done
for mib in 32 64 128 256 512 1024; do
  config=$out/fraglimit/configs/$mib.json
  echo "{\"allocators\": [\"gmlake\"], \"options\": {\"gmlake_frag_limit\": $((mib << 20))}}" \
    >"$config"
  for t in experiments/alloc/data/h200-large*/snapshots/llama2-7b-lora-recompute-zero-b*.pickle.zst; do
    name=$(basename "$t" .pickle.zst)
    build/faultline alloc run --history "$t" --config "$config" \
      --out "$out/fraglimit/$name-$mib.json"
  done
done
exec "$python" "$here/report.py" "$out" "${args[@]}"
