#!/usr/bin/env bash
# PUMP's paper pipeline (experiments/papers/pump/) on a tiny synthetic trace: the pump-* sweeps as
# shipped but for the trace and the steps, then its report (`run.py pump-report`); checks the
# tables, the figures, the claims rows, and that without a CPU lead PUMP's memory factor changes
# nothing (each launch is heard as its kernel starts, so the throttle never has an older kernel to
# wait for).
# usage: papers_pump_test.sh FAULTLINE SOURCE_DIR PYTHON
set -euo pipefail
faultline=$1 src=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$faultline" synth --pattern dnn --footprint 64M --layers 4 --out t.fltrace 2>/dev/null
for s in speedup factor lead; do
  "$python" - "$src/configs/sweeps/pump-$s.json" "$src/configs/runs/pump.json" "$s" <<'PY'
import json
import sys
with open(sys.argv[1]) as f:
    sweep = json.load(f)
sweep.update(base=sys.argv[2], traces=["t.fltrace"], out=f"sweeps/pump-{sys.argv[3]}")
sweep["vary"]["/iterations"] = [2]
with open(f"pump-{sys.argv[3]}.json", "w") as f:
    json.dump(sweep, f)
PY
  "$faultline" sweep "pump-$s.json" --jobs 1 >/dev/null
done
"$python" "$src/experiments/papers/run.py" pump-report sweeps out --claims claims.json \
  --no-situations --live none >/dev/null
"$python" - <<'PY'
import json
import os
for name in ("pump.md", "summary.json", "speedup.png", "factor.png", "lead.png", "ratio.png"):
    assert os.path.getsize(os.path.join("out", name)) > 0, name
summary = json.load(open("out/summary.json"))
spreads = {k: v["spread"] for k, v in summary["factor"].items()}
assert spreads and all(s == 0 for s in spreads.values()), f"the factor matters at lead 0: {spreads}"
assert set(summary["lead"]) == {f"t-{lead}" for lead in (0, 4, 16, 64, 256)}, summary["lead"]
claims = json.load(open("claims.json"))
assert [c["setting"].split(",")[2] for c in claims] == [" capacity 80% of the footprint",
                                                        " capacity 67% of the footprint",
                                                        " capacity 50% of the footprint"], claims
for c in claims:
    assert set(c) == {"paper", "claim", "paper_value", "our_value", "setting", "command"}, c
    assert c["our_value"].endswith("x)") and "about 2x" in c["paper_value"], c
md = open("out/pump.md").read()
assert "## Memory-factor sweep" in md and "## The CPU's lead" in md, md
print(f"papers pump: {len(claims)} claims, factor spread 0 at lead 0 in {len(spreads)} cells")
PY
