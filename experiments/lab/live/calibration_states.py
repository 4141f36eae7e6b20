"""Which of the host's two states each calibration met: the price of its dense fault benchmark.

    experiments/live/calibration.py states [--write] [--data DIR] [--reports DIR]

Every calibration document under DIR (default experiments/live/data/) that measured the fault
benchmarks itself (combined ones are left out: their moments are there as files of their own),
each counted once however many campaigns hold a copy. Its dense fault benchmark, 256 blocks of
32 pages, gives a price per 64 KB page first touched on the GPU and brought from the host; the
first-touch price says the state: fast up to FAST_MAX_US, slow from SLOW_MIN_US, between
otherwise (the two clusters over the committed calibrations, configs/README.md). Per GPU model:
how many of each, and the instances met in both states (the name's second part is the instance:
h100-7856ec42-idle is instance 7856ec42). And each program campaign (`campaign.sh program`,
its report in experiments/live/reports/CAMPAIGN/program.json) beside the state of the profile it
is simulated with: does the state carry the simulator's error? Writes states.json and states.md into
experiments/live/reports/calibration-states/ with --write (else out/live/calibration-states/).
"""
import argparse
import glob
import hashlib
import json
import os
import statistics

from lab.campaigns import read_json
from lab.paths import REPO, live_study_dir
from lab.tables import write_json

SUMMARY = "each calibration's dense fault price, and which of the host's two states it met"

FAST_MAX_US = 4.75
SLOW_MIN_US = 5.25
DENSE = (256, 32)  # blocks, pages a block


def dense_us(measurements, kind):
    """The dense benchmark of KIND ("populate" or "migrate") in block order, us a 64 KB page;
    None where the calibration has no such point."""
    for point in measurements.get("faults", []):
        if (point.get("kind") == kind and point.get("order", "block") == "block"
                and (point.get("blocks"), point.get("pages_per_block")) == DENSE):
            return round(point["ns"] / (DENSE[0] * DENSE[1]) / 1000, 2)
    return None


def state_of(populate_us):
    if populate_us is None:
        return None
    if populate_us <= FAST_MAX_US:
        return "fast"
    return "slow" if populate_us >= SLOW_MIN_US else "between"


def instance_of(name, device):
    """(GPU model, instance) from a profile name such as h100-7856ec42-idle."""
    parts = (name or "").split("-")
    model = parts[0] if parts and parts[0] else (device or "?")
    return model, parts[1] if len(parts) > 1 else name


def calibrations(data_dir):
    """One row per distinct calibration that measured its own fault benchmarks, in path order
    (paths relative to DATA_DIR; of copies, the first)."""
    rows, seen = [], set()
    for path in sorted(glob.glob(os.path.join(data_dir, "**", "calibration", "*.json"),
                                 recursive=True)):
        doc = read_json(path, "calibration_states")
        m = doc.get("measurements") if isinstance(doc, dict) else None
        if not isinstance(m, dict) or not isinstance(m.get("faults"), list) or \
                "combined_from" in m or "pooled_from" in m:
            continue
        key = hashlib.sha256(json.dumps(m["faults"], sort_keys=True).encode()).hexdigest()
        if key in seen:
            continue
        seen.add(key)
        populate = dense_us(m, "populate")
        if populate is None:
            continue
        model, instance = instance_of(doc.get("name"), m.get("device"))
        rows.append({"path": os.path.relpath(path, data_dir), "name": doc.get("name"),
                     "model": model, "instance": instance, "device": m.get("device"),
                     "per_machine": "fault_path_from" in m,
                     "populate_us": populate, "migrate_us": dense_us(m, "migrate"),
                     "state": state_of(populate)})
    return rows


def summary(rows):
    out = {}
    for model in sorted({r["model"] for r in rows}):
        mine = [r for r in rows if r["model"] == model]
        states = {}
        for r in mine:
            states.setdefault(r["instance"], set()).add(r["state"])
        out[model] = {"calibrations": len(mine),
                      **{s: sum(r["state"] == s for r in mine) for s in ("fast", "between", "slow")},
                      "instances": len(states),
                      "instances_in_both": sorted(i for i, s in states.items()
                                                  if {"fast", "slow"} <= s)}
    return out


def program_campaigns(data_dir, reports_dir):
    """Each program campaign with a report: its profile's dense price and state, and the
    simulator's error against the programs (median |error|, signed median by policy)."""
    out = []
    for report in sorted(glob.glob(os.path.join(reports_dir, "*", "program.json"))):
        campaign = os.path.basename(os.path.dirname(report))
        folder = os.path.join(data_dir, campaign)
        named = os.path.join(folder, "profile.txt")
        if not os.path.exists(named):
            continue  # simulated with a shipped profile
        with open(named) as f:
            name = f.read().strip()
        calibration = os.path.join(folder, "profile", "calibration", name + ".json")
        if not os.path.exists(calibration):
            continue  # a profile fitted elsewhere, without its measurements here
        m = read_json(calibration, "calibration_states").get("measurements")
        sim = read_json(report, "calibration_states").get("simulator")
        if not isinstance(m, dict) or not isinstance(sim, dict):
            raise SystemExit(f"calibration_states: {campaign}: expected $.measurements in "
                             f"{calibration} and $.simulator in {report}")
        populate = dense_us(m, "populate")
        if populate is None or not sim.get("runs"):
            continue
        out.append({"campaign": campaign, "populate_us": populate, "state": state_of(populate),
                    "runs": sim["runs"], "median_abs_error": sim.get("median_abs_time_error"),
                    "signed_median_by_policy": sim.get("signed_median_by_policy", {})})
    return out


def by_state(campaigns):
    """Per state: the campaigns, the median of their median |error|s and of each policy's
    signed median."""
    def med(values):
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 4) if values else None
    out = {}
    for state in ("fast", "between", "slow"):
        mine = [c for c in campaigns if c["state"] == state]
        if not mine:
            continue
        policies = sorted({p for c in mine for p in c["signed_median_by_policy"]})
        out[state] = {"campaigns": len(mine),
                      "median_abs_error": med([c["median_abs_error"] for c in mine]),
                      "signed_median_by_policy": {
                          p: med([c["signed_median_by_policy"].get(p) for c in mine])
                          for p in policies}}
    return out


def markdown(doc):
    lines = ["# The host's two states in the calibrations", "",
             f"Made by `{doc['command']}`. Each distinct calibration's dense fault benchmark "
             f"({DENSE[0]} blocks of {DENSE[1]} pages), us a 64 KB page first touched on the "
             f"GPU and brought from the host; fast up to {FAST_MAX_US} us first touch, slow from "
             f"{SLOW_MIN_US}. Paths are under `experiments/live/data/`.", "",
             "| GPU | calibrations | fast | between | slow | instances | instances met in both |",
             "|---|---|---|---|---|---|---|"]
    for model, s in doc["summary"].items():
        lines.append(f"| {model} | {s['calibrations']} | {s['fast']} | {s['between']} | "
                     f"{s['slow']} | {s['instances']} | {len(s['instances_in_both'])} |")
    lines += ["", "Program campaigns by the state of the profile they are simulated with (the "
              "median over campaigns of each one's median |error| and signed medians; each "
              "report's own revision of the simulator):", "",
              "| state | campaigns | median abs error | signed median by policy |",
              "|---|---|---|---|"]
    for state, s in doc["programs_by_state"].items():
        signed = ", ".join(f"{p} {v:+.1%}" for p, v in s["signed_median_by_policy"].items()
                           if v is not None)
        lines.append(f"| {state} | {s['campaigns']} | {s['median_abs_error']:.1%} | {signed} |")
    lines += ["", "| program campaign | state | first touch (us) | runs | median abs error |",
              "|---|---|---|---|---|"]
    for c in doc["program_campaigns"]:
        lines.append(f"| {c['campaign']} | {c['state']} | {c['populate_us']} | {c['runs']} | "
                     f"{c['median_abs_error']:.1%} |")
    lines += ["", "| calibration | state | first touch (us) | from the host (us) |",
              "|---|---|---|---|"]
    for r in doc["calibrations"]:
        lines.append(f"| {r['path']} | {r['state']} | {r['populate_us']} | {r['migrate_us']} |")
    return "\n".join(lines) + "\n"


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(REPO, "experiments", "live", "data"),
                    help="where the campaigns are (default experiments/live/data/)")
    ap.add_argument("--reports", default=os.path.join(REPO, "experiments", "live", "reports"),
                    help="where the campaigns' reports are (default experiments/live/reports/)")
    ap.add_argument("--write", action="store_true",
                    help="into experiments/live/reports/calibration-states/")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.data):
        raise SystemExit(f"calibration_states: {args.data}: no such folder")
    rows = calibrations(args.data)
    if not rows:
        raise SystemExit(f"calibration_states: {args.data}: no calibration with the dense fault "
                         "benchmark")
    programs = program_campaigns(args.data, args.reports)
    doc = {"command": "experiments/live/calibration.py states" + (" --write" if args.write else ""),
           "fast_max_us": FAST_MAX_US, "slow_min_us": SLOW_MIN_US,
           "summary": summary(rows), "programs_by_state": by_state(programs),
           "program_campaigns": programs, "calibrations": rows}
    out_dir = live_study_dir("calibration-states", args.write)
    write_json(os.path.join(out_dir, "states.json"), doc)
    with open(os.path.join(out_dir, "states.md"), "w") as f:
        f.write(markdown(doc))
    for model, s in doc["summary"].items():
        print(f"{model}: {s['calibrations']} calibrations, {s['fast']} fast, {s['between']} "
              f"between, {s['slow']} slow; {len(s['instances_in_both'])} of {s['instances']} "
              "instances met in both")
