#!/usr/bin/env bash
# The main run's pipeline on a small trace: sim with a timeline, then the figure.
# usage: plot_smoke.sh FAULTLINE SOURCE_DIR PYTHON
set -euo pipefail
faultline=$1 src=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$faultline" synth --pattern dnn --footprint 64M --layers 4 --out "$work/t.fltrace" 2>/dev/null
"$faultline" sim --config "$src/configs/runs/default.json" --trace "$work/t.fltrace" \
  --out "$work/r.json" --timeline "$work/tl.json" --no-progress
"$python" "$src/experiments/plot_run.py" "$work/r.json" "$work/fig.png" --timeline "$work/tl.json"
test -s "$work/fig.png"
echo "plot smoke: figure written"
