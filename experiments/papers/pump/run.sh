#!/usr/bin/env bash
# PUMP's evaluation shape (ASP-DAC 2022) in the simulator: speedup over UM (ondemand) per model on
# the H200 and H100 profiles, the memory-factor sweep, PUMP's four default situations, the CPU-lead
# sweep that decides whether the factor matters, and the live replays of pump against ondemand
# committed in experiments/live/data/ beside them. Runs the sweeps configs/sweeps/pump-*.json
# (5 steps each), then pump_figures.py: tables, figures, summary.json and claims.json in
# out/papers/pump/, or with --write-reports in experiments/papers/pump/reports/ and the claims in
# experiments/papers/pump/claims.json.
#   experiments/papers/pump/run.sh [--write-reports] [--jobs N]    (the sweeps on N threads)
set -euo pipefail
cd "$(dirname "$0")/../../.."
paper=pump
source experiments/papers/preamble.sh
for s in speedup h100 factor lead; do
  build/faultline sweep "configs/sweeps/pump-$s.json" "$@"
done
exec "$python" "$here/pump_figures.py" out/sweeps "$out" --claims "$claims"
