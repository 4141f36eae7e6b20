#!/usr/bin/env bash
# The policy comparison: every policy (with DeepUM's ablation) x every real trace x capacity
# {100, 80, 67, 50, 33}% of the footprint, 5 training steps each, then the table and figures in
# out/compare/; with --write-reports also the table into experiments/compare/reports/comparison.md.
# Fails if a run beats its lower bound; names the online runs faster than the oracle.
#   experiments/compare/compare.sh [--write-reports]
set -euo pipefail
cd "$(dirname "$0")/../.."
build/faultline sweep configs/sweeps/real-traces.json
.venv/bin/python experiments/compare/compare.py out/sweeps/real-traces/results.json out/compare
if [ "${1:-}" = --write-reports ]; then
  cp out/compare/comparison.md experiments/compare/reports/comparison.md
fi
