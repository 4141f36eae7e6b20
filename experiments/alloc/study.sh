#!/usr/bin/env bash
# GMLake's evaluation, its shape, from the allocation traces captured on the H200
# (traces/alloc/, by capture.sh and capture_batches.sh), and the link to the UM simulation:
#   experiments/alloc/study.sh [--write-reports]
# 1. every trace through the caching, expandable and GMLake models (configs/alloc/default.json);
# 2. the batch traces of GPT-2 large with recompute under 16 GiB (configs/alloc/limit-16g.json):
#    the largest batch each model fits, beside live.sh's measurement;
# 3. the shipped UM traces re-placed by each model (faultline alloc relayout) and simulated at
#    one capacity: what a defragmenting allocator changes in faults and migrated bytes;
# then the tables and figures (figures.py) in out/alloc/reports/, or with --write-reports in
# experiments/alloc/reports/.
set -euo pipefail
cd "$(dirname "$0")/../.."
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
[ -x build/faultline ] || { echo "study: build/faultline is missing: run ./setup.sh" >&2; exit 1; }
out=out/alloc
reports=$out/reports
[ "${1:-}" = --write-reports ] && reports=experiments/alloc/reports
mkdir -p "$out/sim" "$out/limit" "$out/um"
for t in traces/alloc/*.pickle.zst; do
  name=$(basename "$t" .pickle.zst)
  # The batch series only feeds step 2; its batch 8 is also a run of the capture matrix.
  case $name in gpt2-large-recompute-b[4-79]) ;; *)
    build/faultline alloc run --history "$t" --out "$out/sim/$name.json" ;;
  esac
  case $name in gpt2-large-recompute-b*)
    build/faultline alloc run --history "$t" --config configs/alloc/limit-16g.json \
      --out "$out/limit/$name.json" ;;
  esac
done
for trace in gpt2-small bert-large gpt2-medium; do
  for a in caching expandable gmlake; do
    build/faultline alloc relayout --trace "traces/real/$trace.fltrace" --allocator "$a" \
      --out "$out/um/$trace-$a.fltrace" --stats "$out/um/$trace-$a.relayout.json"
    "$python" experiments/alloc/um_config.py "traces/real/$trace.fltrace" 0.5 \
      >"$out/um/$trace.config.json"
    build/faultline sim --config "$out/um/$trace.config.json" \
      --trace "$out/um/$trace-$a.fltrace" --out "$out/um/$trace-$a.sim.json" --no-progress
  done
done
exec "$python" experiments/alloc/figures.py "$out" experiments/alloc/data "$reports"
