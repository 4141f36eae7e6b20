"""What a capture costs: capture.sh's run logs (`experiments/campaign.sh capture`) as the
overhead table.
    experiments/capture/check.py overhead RUNS_DIR... > OUT.json
(the committed report: experiments/make_reports.sh, from capture/data/h100-runs-*)
One object per workload: {"workload", "plain_s", "capture_s", "cupti_capture_s", "steps",
"ratio", "cupti_ratio", "plain_step_s", "capture_step_s", "machines"}; a mode that was not run
is null; "plain_step_s" lists the plain run's own time for each measured step (the program
reports them), "capture_step_s" the same steps as the capture timed them (the trace's
program_step_ns, from NAME.stats.json: its program pass's, or in older traces its timing
pass's), both from the last folder that has both (one machine: "step_machine"), null where none
has; "machines" names, per mode, the machine of the folder its run came from (its manifest's
machine text). When a workload was run more than once in a mode, the last run counts."""
import argparse
import glob
import json
import os
import sys

from lab.campaigns import load_manifest

SUMMARY = "the overhead table (JSON) from capture run logs: each workload alone against captured"

MODE_KEYS = {"plain": "plain_s", "capture": "capture_s", "cupti": "cupti_capture_s"}


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", metavar="RUNS_DIR")
    args = ap.parse_args(argv)
    rows = {}
    for folder in args.folders:
        machines = load_manifest(folder).get("machine") or [{}]
        machine = "\n".join(machines[0].get("text", [])) or None
        plain_steps = {}
        for path in sorted(glob.glob(os.path.join(folder, "*.runs.jsonl"))):
            for line in open(path):
                run = json.loads(line)
                row = rows.setdefault(run["workload"], {
                    "workload": run["workload"], "plain_s": None, "capture_s": None,
                    "cupti_capture_s": None, "steps": run.get("steps"), "plain_step_s": None,
                    "capture_step_s": None, "step_machine": None, "machines": {}})
                key = MODE_KEYS.get(run["mode"])
                if key:
                    row[key] = run["seconds"]
                    row["machines"][run["mode"]] = machine
                if run["mode"] == "plain":
                    plain_steps[run["workload"]] = (run.get("program") or {}).get("step_seconds")
        for path in sorted(glob.glob(os.path.join(folder, "*.stats.json"))):
            name = os.path.basename(path)[:-len(".stats.json")]
            program = json.load(open(path)).get("program_step_ns")
            if name in rows and program and plain_steps.get(name):
                rows[name]["plain_step_s"] = plain_steps[name]
                rows[name]["capture_step_s"] = [round(t / 1e9, 6) for t in program]
                rows[name]["step_machine"] = machine
    for row in rows.values():
        plain = row["plain_s"]
        row["ratio"] = round(row["capture_s"] / plain, 2) if plain and row["capture_s"] else None
        row["cupti_ratio"] = (round(row["cupti_capture_s"] / plain, 2)
                              if plain and row["cupti_capture_s"] else None)
    json.dump(sorted(rows.values(), key=lambda r: r["workload"]), sys.stdout, indent=1)
    print()
