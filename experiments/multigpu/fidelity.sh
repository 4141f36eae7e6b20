#!/usr/bin/env bash
# Two GPUs, live against simulated, from a campaign of live_harvest.sh (multigpu/data/CAMPAIGN/):
# live_vs_sim.py's table, figure and summary in out/multigpu/CAMPAIGN/, or with --write-reports
# in experiments/multigpu/reports/CAMPAIGN/.
#   experiments/multigpu/fidelity.sh [CAMPAIGN] [--write-reports]
#     CAMPAIGN: h200x2-harvest (default) or h200x2-harvest-idle-neighbour
set -euo pipefail
cd "$(dirname "$0")/../.."
campaign=h200x2-harvest out_root=out/multigpu
for a in "$@"; do
  case $a in
  --write-reports) out_root=experiments/multigpu/reports ;;
  *) campaign=$a ;;
  esac
done
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
[ -x build/faultline ] || { echo "fidelity: build/faultline is missing: run ./setup.sh" >&2; exit 1; }
exec "$python" experiments/multigpu/live_vs_sim.py "experiments/multigpu/data/$campaign" \
  "$out_root/$campaign" --faultline build/faultline
