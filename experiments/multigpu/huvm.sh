#!/usr/bin/env bash
# HUVM's evaluation, its shape, in the simulator on HUVM's machine (p3.8xlarge): consolidation
# cases, the spare-memory sweep, the prefetch-size sweep and the ablation, then the figures and
# the table in out/multigpu/huvm/, or with --write-reports in experiments/multigpu/reports/huvm/.
#   experiments/multigpu/huvm.sh [--write-reports] [--jobs N]    (the sweeps on N threads)
set -euo pipefail
cd "$(dirname "$0")/../.."
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
[ -x build/faultline ] || { echo "huvm: build/faultline is missing: run ./setup.sh" >&2; exit 1; }
out=out/multigpu/huvm
if [ "${1:-}" = --write-reports ]; then
  out=experiments/multigpu/reports/huvm
  shift
fi
for s in consolidation-one consolidation-two spare prefetch ablation; do
  build/faultline sweep "configs/sweeps/huvm-$s.json" "$@"
done
exec "$python" experiments/multigpu/huvm_figures.py out/sweeps "$out"
