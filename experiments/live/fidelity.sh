#!/usr/bin/env bash
# The fidelity report from the committed live replays: every run simulated with the calibrated
# H200 profile in capacity mode "budget", then the table, the figure and the summary.
#   experiments/live/fidelity.sh [LIVE_DIR] [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
live=${1:-experiments/live/results/h200/live}
out=${2:-experiments/live/results/h200}
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
[ -x build/faultline ] || { echo "fidelity: build/faultline is missing: run ./setup.sh" >&2; exit 1; }
exec "$python" experiments/live/fidelity.py "$live" "$out" --gpu h200 --faultline build/faultline
