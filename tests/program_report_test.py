"""experiments/live/fidelity.py program: the committed program campaigns' reports are what their data
give (every run's program time, speedup over ondemand, the simulator's and the replay's errors
against it, the cost of `faultline run`, the runs without a result), and its arithmetic holds."""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(here)
sys.path.insert(0, os.path.join(repo, "experiments"))
from lab.live import program  # noqa: E402

for campaign in ("h200-cb9b8025-program", "h100-aa1dd289-program", "h100-b512fb4d-program",
                 "h100-7095b3b2-program", "h100-be24c470-program"):
    folder = os.path.join(repo, "experiments", "live", "data", campaign)
    doc = program.report(folder, sys.argv[1] if len(sys.argv) > 1 else program.FAULTLINE)
    with open(os.path.join(repo, "experiments", "live", "reports", campaign, "program.json")) as f:
        committed = json.load(f)
    committed.pop("command")
    assert doc == committed, "the committed report is not what the campaign's data give"

    for r in doc["rows"]:
        if r["sim_s"] is not None:
            assert abs(r["sim_error"] - (r["sim_s"] / r["program_s"] - 1)) < 1e-3 + 1e-4 / r["program_s"], r
        if r["replay_s"] is not None:
            assert abs(r["replay_error"] - (r["replay_s"] / r["program_s"] - 1)) < 1e-3 + 1e-4 / r["program_s"], r
        if r["policy"] == "ondemand":
            assert r["speedup_over_ondemand"] == 1.0, r
        if r.get("program_migration_s") is not None:  # the stream's time is part of the run's
            assert 0 < r["program_migration_s"] < r["program_s"], r
            assert 0 <= r["sim_migration_s"] < r["sim_s"], r
    for o in doc["overhead"]:
        assert abs(o["cost"] - (o["run_seconds"] / o["plain_seconds"] - 1)) < 1e-3, o
    errors = [abs(r["sim_error"]) for r in doc["rows"] if r["sim_error"] is not None]
    assert doc["simulator"]["runs"] == len(errors)
    assert doc["simulator"]["max_abs_time_error"] == round(max(errors), 4)
    # Nothing is silently left out: every run without a result, and every run the simulator refused.
    assert len(doc["without_result"]) == len(program.refusals(folder))
    assert all(u["message"] for u in doc["unsimulated"])
    print(f"program report: {len(doc['rows'])} runs, {len(doc['without_result'])} without a result")

# results/holdout.json: the newest hold-out campaign's summary, the program as ground truth, is
# what the committed program report gives for the hold-out programs alone.
from lab.live import results  # noqa: E402

with open(os.path.join(repo, "experiments", "live", "results", "holdout.json")) as f:
    held = json.load(f)
assert held == results.newest_holdout(), "results/holdout.json is not what the reports give"
assert held["ground_truth"] == "program" and held["campaign"] == results.NEWEST_HOLDOUT
assert set(held["programs"]) <= set(results.holdout_programs()), held["programs"]
assert "resnet50" not in held["programs"]  # a shipped program is no hold-out
print(f"holdout.json: {held['runs']} runs of {', '.join(held['programs'])}")
