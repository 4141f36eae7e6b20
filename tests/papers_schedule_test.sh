#!/usr/bin/env bash
# The schedule policy's pipeline (experiments/papers/schedule/) on a tiny synthetic DNN trace: the
# sweep as shipped but for the trace and the steps, then its report (`run.py schedule-report`);
# checks the tables, figures and claims, and what the policy must do on a step that repeats: at
# half the footprint at least twice as fast as ondemand, never more than 5% slower than it
# anywhere.
# usage: papers_schedule_test.sh FAULTLINE SOURCE_DIR PYTHON
set -euo pipefail
faultline=$1 src=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$faultline" synth --pattern dnn --footprint 64M --layers 4 --iterations 2 --out t.fltrace 2>/dev/null
"$python" - "$src/configs/sweeps/schedule.json" "$src/configs/runs/default.json" <<'PY'
import json
import sys
with open(sys.argv[1]) as f:
    sweep = json.load(f)
sweep.update(base=sys.argv[2], traces=["t.fltrace"], out="sweeps/schedule")
sweep["vary"]["/iterations"] = [6]
with open("schedule.json", "w") as f:
    json.dump(sweep, f)
PY
"$faultline" sweep schedule.json --jobs 1 >/dev/null
"$python" "$src/experiments/papers/run.py" schedule-report sweeps/schedule/results.json out \
  --claims claims.json --dnn t --live none >/dev/null
"$python" - <<'PY'
import json
import os
for name in ("schedule.md", "summary.json", "speedup.png", "of_oracle.png"):
    assert os.path.getsize(os.path.join("out", name)) > 0, name
s = json.load(open("out/summary.json"))
half = s["dnn_at_50"]["t"]
assert half["speedup_over_ondemand"] >= 2, half
assert s["max_vs_ondemand"] <= 1.05, s["max_vs_ondemand"]
assert s["runs_beyond_5_percent_slower"] == 0, s
assert s["dnn_targets_met"] == ["t"] or half["vs_best_oracle"] > 1.3, s
claims = json.load(open("claims.json"))
assert len(claims) == 3 and all(c["command"] == "experiments/papers/run.py schedule --write-reports"
                                for c in claims)
PY
echo "papers_schedule: ok"
