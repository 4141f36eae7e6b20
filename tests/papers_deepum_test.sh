#!/usr/bin/env bash
# DeepUM's paper pipeline (experiments/papers/deepum/) on tiny synthetic traces: the deepum-*
# sweeps as shipped but for the traces, then its report (`run.py deepum-report`); checks the
# tables, the figure and the claims rows, and what the study rests on: DeepUM beats UM on a
# streaming trace once its tables are trained, and a slower fault path (UM's cost) raises DeepUM's
# speedup.
# usage: papers_deepum_test.sh FAULTLINE SOURCE_DIR PYTHON
set -euo pipefail
faultline=$1 src=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
# A stream, not the dnn pattern: that one allocates each step's activations at new addresses, so
# DeepUM's execution IDs (kernel name and argument blocks) never repeat and it learns nothing.
"$faultline" synth --pattern stream --footprint 128M --kernels 8 --iterations 3 \
  --ns-per-access 2000 --out t.fltrace 2>/dev/null
for s in fig9 gpus fault-path queue; do
  "$python" - "$src/configs/sweeps/deepum-$s.json" "$src/configs/runs/deepum-v100.json" "$s" <<'PY'
import json
import sys
with open(sys.argv[1]) as f:
    sweep = json.load(f)
sweep.update(base=sys.argv[2], traces=["t.fltrace"], out=f"sweeps/deepum-{sys.argv[3]}")
sweep.setdefault("vary", {})["/iterations"] = [3]
with open(f"deepum-{sys.argv[3]}.json", "w") as f:
    json.dump(sweep, f)
PY
  "$faultline" sweep "deepum-$s.json" --jobs 1 >/dev/null
done
"$python" "$src/experiments/papers/run.py" deepum-report sweeps out --claims claims.json
"$python" - <<'PY'
import json
import os
for name in ("deepum.md", "deepum.png"):
    assert os.path.getsize(os.path.join("out", name)) > 0, name
claims = json.load(open("claims.json"))
assert [c["claim"] for c in claims][0] == "DeepUM speedup over UM (mean)", claims
assert len(claims) == 4, claims
for c in claims:
    assert set(c) == {"paper", "claim", "paper_value", "our_value", "setting", "command"}, c
assert claims[0]["paper_value"] == 3.06 and claims[0]["our_value"] > 1, claims[0]
md = open("out/deepum.md").read()
for section in ("## Fig. 9(b) shape", "## Ablation", "## Cause: the fault path",
                "## Cause: the prefetch queue"):
    assert section in md, section
rows = [line for line in md.splitlines() if line.startswith("| t | + invalidation |")]
speedups = [float(v) for v in rows[0].split("|")[3].split(",")]
assert min(speedups[1:]) > speedups[0], speedups
print(f"papers deepum: {len(claims)} claims, speedup over UM {claims[0]['our_value']}, "
      f"fault-path speedups {speedups}")
PY
