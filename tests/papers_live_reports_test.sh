#!/usr/bin/env bash
# The two-GPU live reports (issue 27) from the committed campaigns, into a scratch folder: GMLake
# under FSDP (experiments/alloc/data/h200x2-fsdp, its histories replayed through the allocator
# models) and HUVM's headline (experiments/multigpu/reports/h200x2-huvm-*). Checks that the
# numbers follow from the data: saved GB and points from the per-rank results, the GMLake model
# equal to the live GMLake allocator it is built from, the speedups from the fidelity tables, and
# that the claims rows carry every field `run.py claims` needs.
# usage: papers_live_reports_test.sh FAULTLINE SOURCE_DIR PYTHON
set -euo pipefail
faultline=$1 src=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" "$src/experiments/papers/run.py" gmlake-fsdp --faultline "$faultline" \
  --out "$work/gmlake" >/dev/null
"$python" "$src/experiments/papers/run.py" huvm-live --out "$work/huvm" >/dev/null
# prefetch_split.py writes into out/multigpu/CAMPAIGN/ of the source tree (ignored by git).
"$python" "$src/experiments/live/diagnose.py" prefetch-split h200x2-huvm-idle \
  --faultline "$faultline" >/dev/null
"$python" - "$work" "$src" <<'PY'
import csv
import glob
import json
import os
import sys

work, src = sys.argv[1:]
fields = ["paper", "claim", "paper_value", "our_value", "setting", "command"]
for path in glob.glob(os.path.join(work, "*", "claims-*.json")):
    for row in json.load(open(path)):
        assert all(f in row for f in fields), (path, row)

doc = json.load(open(os.path.join(work, "gmlake", "fsdp.json")))
data = os.path.join(src, "experiments", "alloc", "data", "h200x2-fsdp")
counted = [r for r in doc["runs"] if "saved_gb" in r]
assert counted, "no configuration counted"
for r in counted:
    ranks = {a: [json.load(open(p)) for p in
                 sorted(glob.glob(os.path.join(data, f"{r['run']}-{a}.rank*.json")))]
             for a in ("default", "faultline")}
    reserved = {a: sum(x["peak_reserved"] for x in rs) / len(rs) for a, rs in ranks.items()}
    assert abs(r["saved_gb"] - (reserved["default"] - reserved["faultline"]) / 1e9) < 1e-6, r["run"]
    # The live GMLake allocator runs the model's code: the model replaying PyTorch's history
    # must land within 2% of it, and the caching model within 2% of PyTorch itself.
    assert abs(r["sim"]["gmlake"]["peak_reserved"] / reserved["faultline"] - 1) < 0.02, r["run"]
    assert abs(r["sim"]["caching"]["peak_reserved"] / reserved["default"] - 1) < 0.02, r["run"]
ours = doc["ours"]
assert abs(ours["saved_gb_max"] - max(r["saved_gb"] for r in counted)) < 1e-9
assert ours["not_counted"] == [r["run"] for r in doc["runs"] if "saved_gb" not in r]

live = json.load(open(os.path.join(work, "huvm", "live.json")))
for g in live["groups"]:
    table = os.path.join(src, "experiments", "multigpu", "reports", g["campaign"], "fidelity.csv")
    rows = {r["variant"]: r for r in csv.DictReader(open(table)) if r["trace"] == g["trace"]}
    want = float(rows["preevict"]["live_s"]) / float(rows["harvest"]["live_s"])
    assert abs(g["live_speedup"] - want) < 1e-9, g
    assert g["live_winner"] == min(rows, key=lambda v: float(rows[v]["live_s"])), g
claims = json.load(open(os.path.join(work, "huvm", "claims-live.json")))
assert claims[0]["our_value"] == round(max(g["live_speedup"] for g in live["groups"]), 2)
# The per-kernel split: live totals are the campaign's first repeats, and the time in and
# between kernels adds up to no more than the run's total.
split = json.load(open(os.path.join(src, "out", "multigpu", "h200x2-huvm-idle",
                                    "prefetch_split.json")))
campaign = os.path.join(src, "experiments", "multigpu", "data", "h200x2-huvm-idle")
assert len(split["groups"]) == 2, split["groups"]
for g in split["groups"]:
    for v in ("peer", "harvest"):
        run = json.load(open(os.path.join(campaign, f"{g['trace']}-{v}-0.5.json")))
        live = g[v]["live"]
        assert abs(live["total_s"] - run["results"]["total_time_ns"] / 1e9) < 1e-9, (g["trace"], v)
        for side in ("live", "sim"):
            m = g[v][side]
            assert m["kernels_s"] + m["between_s"] <= m["total_s"] + 1e-6, (g["trace"], v, side)
print("live reports: ok")
PY
