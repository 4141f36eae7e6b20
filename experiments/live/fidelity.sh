#!/usr/bin/env bash
# The fidelity report from the committed live replays: every run simulated with the calibrated
# profile of the GPU it ran on, in capacity mode "budget", then the table, the figure and the
# summary.
#   experiments/live/fidelity.sh [GPU]     GPU: h200 (default; all 7 traces) or h100 (2 traces)
set -euo pipefail
cd "$(dirname "$0")/../.."
gpu=${1:-h200}
live=experiments/live/results/$gpu/live
out=experiments/live/results/$gpu
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
[ -x build/faultline ] || { echo "fidelity: build/faultline is missing: run ./setup.sh" >&2; exit 1; }
exec "$python" experiments/live/fidelity.py "$live" "$out" --gpu "$gpu" --faultline build/faultline
