# What every experiments/papers/PAPER/run.sh begins with, sourced from the repository root with
# `paper` set: `python` (the venv's when there is one), a stop when build/faultline is missing,
# and a leading --write-reports taken off the arguments. `out` and `claims` are then
# experiments/papers/PAPER/reports and experiments/papers/PAPER/claims.json, else
# out/papers/PAPER and out/papers/PAPER/claims.json; `write_reports` is 1 or 0.
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
[ -x build/faultline ] || { echo "$paper: build/faultline is missing: run ./setup.sh" >&2; exit 1; }
here=experiments/papers/$paper
out=out/papers/$paper claims=out/papers/$paper/claims.json write_reports=0
if [ "${1:-}" = --write-reports ]; then
  out=$here/reports claims=$here/claims.json write_reports=1
  shift
fi
