#!/usr/bin/env bash
# The main run: simulate the shipped trace under the default config, then draw its figure.
# Writes out/main/{results.json,timeline.json,figure.png}.
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:-traces/real/resnet50.fltrace}
config=${2:-configs/runs/default.json}
mkdir -p out/main
build/faultline sim --config "$config" --trace "$trace" \
  --out out/main/results.json --timeline out/main/timeline.json
.venv/bin/python experiments/plot_run.py out/main/results.json out/main/figure.png \
  --timeline out/main/timeline.json
.venv/bin/python -c "
import json; r = json.load(open('out/main/results.json'))['results']
print('total {:.1f} ms (compute {:.1f} ms, fault stall {:.1f} ms), {} faults in {} batches, '
      '{:.2f} GiB host->GPU, {} evictions'.format(r['total_time_ns']/1e6, r['compute_ns']/1e6,
      r['fault_stall_ns']/1e6, r['faults'], r['batches'], r['bytes_host_to_gpu']/2**30, r['evictions']))"
