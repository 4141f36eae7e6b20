"""The live fidelity results per GPU model, from the campaigns' reports (reports/CAMPAIGN/, which
`fidelity.py report --write-reports` makes). experiments/live/results/holdout.json is the newest
hold-out campaign's summary (NEWEST_HOLDOUT: the simulator against the program itself where the
campaign ran the programs under `faultline run`, else against the replay); results/GPU/ holds

  summary.json          the shipped traces' fidelity at the newest campaign, with its instance's
                        own calibration (keys of fidelity.py's summary: median_abs_time_error,
                        max_abs_time_error, ...), the same per policy (by_policy), and the
                        campaign; median_abs_htod_error and median_abs_dtoh_error (and their
                        max) from the GPU's campaign of runs that drained CUPTI's records
                        (bytes_campaign): the timed campaign's bytes are lower bounds, kept as
                        undrained_median_abs_*
  holdout/summary.json  the same for the hold-out programs (holdout/README.md), never tuned on
  holdout3/summary.json the same for the third hold-out set (bfs, vit, lstm; H200)
  holdout2/summary.json the same for the second hold-out set (radix-sort, cg, unet), captured
                        after the first set had led to a model change (holdout/README.md)
  holdout*/instances.json  each set on each instance that ran it, with its own and the shipped
                        profile
  instances.json        per instance: error with its per-machine calibration, its full one and
                        the shipped profile (where made), and the median over instances of each
                        (by_calibration); the live times of runs made on two instances; how
                        fast each instance ran and how far its calibration followed (speeds:
                        speeds.py)
  misses.json           every set's runs beyond 15%, the same runs on the other instances, and
                        their measured causes (misses.py, causes.json)
  rankings_within_gpu_spread (each set's summary): the (trace, budget) groups whose every pair
                        of policies the simulator orders otherwise than the headline instance's
                        GPU is one the other instances' GPUs order the other way (rank_spread.py;
                        the README's "Policy rankings" lists the pairs)
  README.md             these as tables

    experiments/live/results.py [--write]   (without --write: into out/live/results/)
    experiments/live/results.py --list      the campaigns whose reports it reads
"""
import argparse
import csv
import json
import os
import statistics

from lab.campaigns import read_json
from lab.live import fidelity as fidelity_module
from lab.live import misses, program, rank_spread, speeds
from lab.live.results_readme import POLICIES, pct, readme
from lab.paths import REPO
from lab.tables import write_json

LIVE = os.path.join(REPO, "experiments", "live")
# GPU model -> the campaigns its results come from: the shipped traces (newest first), the
# hold-out programs (the first set: holdout, on each instance: holdouts; the second set, kept
# apart because the first set is no longer unseen: holdout2, holdouts2; the third: holdout3,
# holdouts3), and every campaign of
# an instance that calibrated itself.
CAMPAIGNS = {"h100": {"shipped": "h100-5d0a844e", "holdout": "h100-d45e9c4d-holdout",
                      "holdouts": ["h100-d45e9c4d-holdout", "h100-3b6d3eb5-holdout",
                                   "h100-ee8e9a35-holdout",
                                   "h100-7e692ff5-holdout",
                                   "h100-a069ff39-holdout", "h100-c1cb0b94-holdout",
                                   "h100-d84f7d54-holdout"],
                      "holdout2": "h100-5d0a844e-holdout2",
                      "holdout2_bytes": "h100-8ae867ee-holdout2-drained",
                      "holdouts2": ["h100-5d0a844e-holdout2", "h100-d45e9c4d-holdout2"],
                      "instances": ["h100-5d0a844e", "h100-ee8e9a35", "h100-a069ff39", "h100-e125e874", "h100-c0983819",
                                    "h100-aaf0ecf1", "h100-c1cb0b94", "h100-61c1b2ea",
                                    "h100-47af6fc2", "h100-562e6395", "h100-ba63a39e",
                                    "h100-ea349c50", "h100-8128e920", "h100-3b6d3eb5"],
                      # bytes with CUPTI's records drained (fidelity.drained)
                      "bytes": "h100-bd830cd8-drained"},
             "h200": {"shipped": "h200-153bc426", "holdout": "h200-8369fa7f-holdout",
                      "holdout_bytes": "h200-33f97d66-holdout-drained",
                      "holdouts": ["h200-8369fa7f-holdout", "h200-33f97d66-holdout",
                                   "h200-d4fa298c-holdout", "h200-b10745b3-holdout",
                                   "h200-99f28b56-holdout", "h200-4569ca28-holdout",
                                   "h200-b6da2e9e-holdout", "h200-73e906f0-holdout",
                                   "h200-eb0c0b30-holdout", "h200-47aad059-holdout"],
                      "holdout2": "h200-153bc426-holdout2",
                      "holdout2_bytes": ["h200-f398f79a-holdout2-drained",
                                         "h200-9887cdf3-holdout2-drained"],
                      "holdouts2": ["h200-153bc426-holdout2", "h200-8369fa7f-holdout2",
                                    "h200-f398f79a-holdout2", "h200-4569ca28-holdout2",
                                    "h200-b6da2e9e-holdout2", "h200-73e906f0-holdout2",
                                    "h200-d501b18d-holdout2"],
                      # the third set (bfs, vit, lstm), captured after read_since_discard; on
                      # 80d0d4ec and 632ef450 its runs were split between the two
                      "holdout3": "h200-153bc426-holdout3",
                      "holdout3_bytes": ["h200-d0a1cf3e-holdout3-drained",
                                         "h200-9887cdf3-holdout3-drained"],
                      "holdouts3": ["h200-153bc426-holdout3", "h200-8369fa7f-holdout3",
                                    "h200-80d0d4ec-holdout3", "h200-632ef450-holdout3",
                                    "h200-c9770d01-holdout3", "h200-2f4aa42a-holdout3",
                                    "h200-4569ca28-holdout3", "h200-b6da2e9e-holdout3",
                                    "h200-9887cdf3-holdout3", "h200-72c31ee3-holdout3"],
                      "instances": ["h200-153bc426", "h200-8369fa7f", "h200-7fd75295",
                                    "h200-d4fa298c", "h200-b10745b3", "h200-99f28b56",
                                    "h200-d628e5be", "h200-d44298ce", "h200-1ce9b187",
                                    "h200-2f4aa42a", "h200-b6da2e9e", "h200-73e906f0",
                                    "h200-020da2e3", "h200-1285417e", "h200-69199a4a",
                                    "h200-7f75d879-repeats", "h200-35bf2c4b-repeats"],
                      # policies/schedule/ on the shipped traces (its own instance, calibrated)
                      "schedule": "h200-af535a9c", "bytes": "h200-983f93d4-drained",
                      # calibrated before and after their runs (campaign.sh recalibrate); the
                      # first two in passes, drift.py's reports beside
                      "drift": ["h200-9bc851db-drift", "h200-a74c9e80-drift", "h200-98f3d6e5"]}}
KEYS = ["runs", "median_abs_time_error", "max_abs_time_error", "runs_within_10_percent",
        "median_abs_htod_error", "max_abs_htod_error", "median_abs_dtoh_error",
        "max_abs_dtoh_error", "undrained_median_abs_htod_error",
        "undrained_median_abs_dtoh_error", "rankings_same", "rankings"]
BYTE_KEYS = ["median_abs_htod_error", "max_abs_htod_error", "median_abs_dtoh_error",
             "max_abs_dtoh_error", "drained_runs", "all_drained_median_abs_htod_error",
             "all_drained_median_abs_dtoh_error", "bytes_not_conserved"]


# The profiles a campaign's runs are simulated with (fidelity_campaign.py): the report's folder for each.
PROFILES = {"shipped": "shipped-profile", "per_machine": "per-machine-profile",
            "full": "full-calibration"}


def own_calibration(campaign):
    """"per_machine" or "full": how the campaign's own profile was calibrated (a per-machine
    calibration's measurements name the profile whose fault path they keep)."""
    with open(os.path.join(LIVE, "data", campaign, "manifest.json")) as f:
        profile = json.load(f)["gpu_profile"]
    name = os.path.splitext(os.path.basename(profile))[0]
    path = os.path.join(LIVE, "data", campaign, os.path.dirname(os.path.dirname(profile)),
                        "calibration", f"{name}.json")
    with open(path) as f:
        return "per_machine" if "fault_path_from" in json.load(f)["measurements"] else "full"


# The newest hold-out campaign, summarised in results/holdout.json: a `campaign.sh program`
# campaign (the program itself as the ground truth) or a replay campaign (the replay as it).
NEWEST_HOLDOUT = "h100-b7059fdc-program"


def holdout_programs():
    """The hold-out programs, as holdout/README.md's table lists them."""
    names = []
    with open(os.path.join(LIVE, "holdout", "README.md")) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) >= 2 and cells[0].isdigit() and cells[1].startswith("`"):
                names.append(cells[1].strip("`"))
    return names


def newest_holdout(campaign=NEWEST_HOLDOUT):
    """{campaign, programs, runs, ground_truth, median_abs_time_error, max_abs_time_error,
    signed_median_by_policy} of CAMPAIGN's hold-out programs: the simulator against the program
    where the campaign ran the programs (its program.json), else against the replay."""
    held = set(holdout_programs())
    path = os.path.join(LIVE, "reports", campaign, "program.json")
    if os.path.exists(path):
        rows = [r for r in read_json(path, "results")["rows"] if r["program"] in held]
        truth = "program"
    else:
        _, all_rows = report(campaign)
        if not all_rows:
            raise SystemExit(f"results: no report of the hold-out campaign {campaign}: run "
                             f"experiments/live/fidelity.py report {campaign} --write-reports")
        rows = [{"program": r["trace"], "policy": r["policy"], "sim_error": float(r["time_error"])}
                for r in all_rows if r["trace"] in held]
        truth = "replay"
    if not rows:
        raise SystemExit(f"results: {campaign} ran none of the hold-out programs "
                         f"({', '.join(sorted(held))})")
    s = program.summary_of(rows, "sim_error", per_program=False)
    return {"campaign": campaign, "programs": sorted({r["program"] for r in rows}),
            "runs": s["runs"], "ground_truth": truth,
            "median_abs_time_error": s["median_abs_time_error"],
            "max_abs_time_error": s["max_abs_time_error"],
            "signed_median_by_policy": s["signed_median_by_policy"]}


def report(campaign, profile=None):
    """The campaign's report simulated with its own profile, or with PROFILES[profile]."""
    folder = os.path.join(LIVE, "reports", campaign, PROFILES[profile] if profile else "")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        return None, []
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(folder, "fidelity.csv")) as f:
        rows = list(csv.DictReader(f))
    return summary, rows


def by_policy(rows):
    """Per policy: its runs' median and max |time error| and median signed error (the sign says
    whether the simulator is fast, negative, or slow)."""
    out = {}
    for policy in POLICIES:
        errors = [float(r["time_error"]) for r in rows if r["policy"] == policy]
        if errors:
            out[policy] = {"runs": len(errors),
                           "median_abs_time_error": statistics.median(map(abs, errors)),
                           "max_abs_time_error": max(map(abs, errors)),
                           "median_time_error": statistics.median(errors)}
    return out


def drained_report(campaign):
    summary, rows = report(campaign)
    if summary is None:
        raise SystemExit(f"results: no report of the bytes campaign {campaign}: run "
                         f"experiments/live/fidelity.py report {campaign} --write-reports")
    return summary, rows


def byte_row(row):
    """A fidelity.csv row with the fields fidelity.byte_summary reads, typed."""
    flag = {"True": True, "False": False, "": None}
    excess = row["excess_bytes_back_gb"]
    return {**{k: row[k] for k in ("trace", "policy")}, "budget": float(row["budget"]),
            **{f"{side}_{way}_gb": float(row[f"{side}_{way}_gb"])
               for side in ("live", "sim") for way in ("htod", "dtoh")},
            "counters_drained": flag[row["counters_drained"]],
            "bytes_conserved": flag[row["bytes_conserved"]],
            "excess_bytes_back_gb": float(excess) if excess else None}


def pooled_bytes(campaigns):
    """The byte keys over the drained runs of several campaigns (one set's runs made on more
    than one instance, each simulated with its own instance's profile)."""
    rows = [byte_row(r) for c in campaigns for r in drained_report(c)[1]]
    return fidelity_module.byte_summary(rows)


def fidelity(campaign, bytes_campaign=None):
    """The campaign's summary; its byte errors from the drained runs of BYTES_CAMPAIGN (a
    campaign, or a list of them whose runs are pooled) where given."""
    summary, rows = report(campaign)
    out = {"campaign": campaign, "report": f"experiments/live/reports/{campaign}/",
           "gpu_profile": summary["gpu_profile"], "sim_revision": summary["sim_revision"],
           **{k: summary.get(k) for k in KEYS}, "by_policy": by_policy(rows)}
    if isinstance(bytes_campaign, list):
        pooled = pooled_bytes(bytes_campaign)
        out.update({k: pooled[k] for k in BYTE_KEYS}, bytes_runs=pooled["bytes_runs"],
                   bytes_campaign=bytes_campaign,
                   bytes_report=[f"experiments/live/reports/{c}/" for c in bytes_campaign])
    elif bytes_campaign:
        drained, _ = drained_report(bytes_campaign)
        # The byte errors come from other runs than `runs`: bytes_runs says how many.
        # bytes_runs: the drained runs whose counters conserve bytes (fidelity.py), whose errors
        # the medians are; reports made before that check compared every drained run.
        out.update({k: drained.get(k) for k in BYTE_KEYS},
                   bytes_runs=drained.get("bytes_runs", drained["drained_runs"]),
                   bytes_campaign=bytes_campaign,
                   bytes_report=f"experiments/live/reports/{bytes_campaign}/")
    if "filled_from_shipped_profile" in summary:
        out["filled_from_shipped_profile"] = summary["filled_from_shipped_profile"]
    return out


def instances(names):
    out, live, folders = [], {}, {}
    for name in names:
        own, own_rows = report(name)
        kind = own_calibration(name)
        folders[name] = {kind: None, "shipped": "shipped"}
        folders[name].update({k: k for k in ("per_machine", "full") if k != kind})
        entry = {"campaign": name, "profile": own["gpu_profile"], "calibration": kind,
                 "runs": own["runs"],
                 **{f"own_{k}": own[k] for k in ("median_abs_time_error", "max_abs_time_error")}}
        for which, folder in folders[name].items():
            summary, _ = report(name, folder)
            for k in ("median_abs_time_error", "max_abs_time_error"):
                entry[f"{which}_{k}"] = summary[k] if summary else None
            if which == "shipped":
                entry["shipped_profile"] = summary["gpu_profile"]
        out.append(entry)
        for r in own_rows:
            live.setdefault((r["trace"], r["policy"], r["budget"]), {})[name] = float(r["live_s"])
    # Runs made on two instances or more (not all campaigns ran the same grid).
    common_runs = [{"trace": t, "policy": p, "budget": float(b), "live_s": v}
                   for (t, p, b), v in sorted(live.items()) if len(v) >= 2]
    ratios = [max(r["live_s"].values()) / min(r["live_s"].values()) for r in common_runs]
    shared = {(r["trace"], r["policy"], r["budget"]) for r in common_runs}
    for i, name in zip(out, names):  # each instance on the runs all of them made
        for which, folder in folders[name].items():
            _, rows = report(name, folder)
            errors = [abs(float(r["time_error"])) for r in rows
                      if (r["trace"], r["policy"], float(r["budget"])) in shared]
            i[f"{which}_median_abs_time_error_on_common_runs"] = (statistics.median(errors)
                                                                  if errors else None)
    # One number per way of calibrating: the median over instances of each one's median error.
    ways = {}
    for which in ("per_machine", "full", "shipped"):
        medians = [i[f"{which}_median_abs_time_error"] for i in out
                   if i[f"{which}_median_abs_time_error"] is not None]
        ways[which] = {"instances": len(medians),
                       "median_of_medians": statistics.median(medians) if medians else None,
                       "max_of_medians": max(medians) if medians else None}
    return {"instances": out, "by_calibration": ways, "common_runs": common_runs,
            "median_live_ratio": statistics.median(ratios) if ratios else None,
            "max_live_ratio": max(ratios) if ratios else None}


def holdouts(names):
    """The hold-out programs on each instance: with the campaign's own profile (its instance's
    calibration, or the shipped profile where the instance was not calibrated) and with the
    shipped one."""
    out = []
    for name in names:
        own, _ = report(name)
        shipped, _ = report(name, "shipped")
        entry = {"campaign": name, "profile": own["gpu_profile"], "runs": own["runs"],
                 "calibrated": own["gpu_profile"].endswith(".json")}
        for which, summary in (("own", own), ("shipped", shipped or own)):
            for k in ("median_abs_time_error", "max_abs_time_error"):
                entry[f"{which}_{k}"] = summary[k]
            entry[f"{which}_median_time_error"] = statistics.median(
                float(r["time_error"]) for r in report(name, None if summary is own
                                                        else "shipped")[1])
        out.append(entry)
    return out


def write_holdout(folder, summary, held):
    """A hold-out set's summary (where the GPU has a campaign of it) and each instance's run of
    it, into FOLDER."""
    os.makedirs(folder, exist_ok=True)
    if summary:
        write_json(os.path.join(folder, "summary.json"), summary)
    write_json(os.path.join(folder, "instances.json"), held)


# Each set's label, its main campaign's key in CAMPAIGNS and its instances' key.
SETS = (("shipped traces", "shipped", "instances"), ("hold-out, first set", "holdout", "holdouts"),
        ("hold-out, second set", "holdout2", "holdouts2"),
        ("hold-out, third set", "holdout3", "holdouts3"))


def gpu_misses(gpu, c, causes):
    """Each set's runs beyond the target, against the other instances that ran the set."""
    found = []
    swaps = misses.load_swaps(os.path.join(LIVE, "reports", "cost-swap", gpu + ".json"))
    for label, main, siblings in SETS:
        if not c.get(main):
            continue
        others = {name: report(name)[1] for name in c.get(siblings, [])}
        priced = misses.load_priced(os.path.join(LIVE, "reports", c[main], "run-priced",
                                                 "run_priced.json"))
        found += misses.misses(gpu, label, c[main], report(c[main])[1], others, causes, priced,
                               swaps)
    return found


def gpu_rankings(c):
    """Each set's policy rankings in its headline campaign against the GPU's spread across the
    other instances that ran the set (rank_spread.py): {label: (campaign, groups)}."""
    out = {}
    for label, main, siblings in SETS:
        if not c.get(main):
            continue
        here = speeds.instance_of(c[main])
        others = {name: report(name)[1] for name in c.get(siblings, [])
                  if speeds.instance_of(name) != here}
        out[label] = (c[main], rank_spread.rank_spread(report(c[main])[1], others))
    return out


def campaigns():
    """Every campaign CAMPAIGNS names, each once, in order."""
    out = []
    for c in CAMPAIGNS.values():
        for value in c.values():
            for name in value if isinstance(value, list) else [value]:
                if name and name not in out:
                    out.append(name)
    return out


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="into experiments/live/results/")
    ap.add_argument("--list", action="store_true",
                    help="print the campaigns whose reports it reads, one a line, and stop")
    args = ap.parse_args(argv)
    if args.list:
        print("\n".join(campaigns()))
        return
    root = os.path.join(LIVE, "results") if args.write else os.path.join(REPO, "out",
                                                                          "live", "results")
    causes = misses.load_causes(repo=REPO)
    os.makedirs(root, exist_ok=True)
    write_json(os.path.join(root, "holdout.json"), newest_holdout())
    for gpu, c in CAMPAIGNS.items():
        shipped = fidelity(c["shipped"], c.get("bytes"))
        holdout = fidelity(c["holdout"], c.get("holdout_bytes")) if c["holdout"] else None
        inst = instances(c["instances"])
        inst["speeds"] = speeds.speeds({name: report(name)[1] for name in dict.fromkeys(
            c["instances"] + c.get("holdouts", []) + c.get("holdouts2", [])
            + c.get("holdouts3", []))})
        median = os.path.join(LIVE, "reports", "median-profile", gpu, "summary.json")
        if os.path.exists(median):  # median_profile.py --evaluate: one profile for any instance
            inst["median_profile"] = {k: read_json(median, "results")[k]
                                      for k in ("instances", "all", "holdout")}
        held = holdouts(c["holdouts"])
        holdout2 = fidelity(c["holdout2"], c.get("holdout2_bytes")) if c.get("holdout2") else None
        held2 = holdouts(c.get("holdouts2", []))
        holdout3 = fidelity(c["holdout3"], c.get("holdout3_bytes")) if c.get("holdout3") else None
        held3 = holdouts(c.get("holdouts3", []))
        ranked = gpu_rankings(c)
        for (label, _, _), summary in zip(SETS, (shipped, holdout, holdout2, holdout3)):
            if summary and label in ranked:
                summary["rankings_within_gpu_spread"] = rank_spread.counts(
                    ranked[label][1])["rankings_within_gpu_spread"]
        os.makedirs(os.path.join(root, gpu), exist_ok=True)
        write_json(os.path.join(root, gpu, "summary.json"), shipped)
        write_json(os.path.join(root, gpu, "instances.json"), inst)
        schedule = fidelity(c["schedule"]) if c.get("schedule") else None
        if schedule:
            write_json(os.path.join(root, gpu, "schedule.json"), schedule)
        write_holdout(os.path.join(root, gpu, "holdout"), holdout, held)
        if holdout2 or held2:
            write_holdout(os.path.join(root, gpu, "holdout2"), holdout2, held2)
        if holdout3 or held3:
            write_holdout(os.path.join(root, gpu, "holdout3"), holdout3, held3)
        found = gpu_misses(gpu, c, causes)
        write_json(os.path.join(root, gpu, "misses.json"), found)
        with open(os.path.join(root, gpu, "README.md"), "w") as f:
            f.write(readme(gpu, shipped, holdout, inst, held, schedule, holdout2, held2, holdout3,
                           held3)
                    + "\n".join(speeds.readme_section(inst["speeds"]) +
                                rank_spread.readme_section(ranked) + misses.readme_section(found)))
        print(f"{gpu}: " + ", ".join(
            f"{label} {pct(s['median_abs_time_error'])} / {pct(s['max_abs_time_error'])}"
            for label, s in (("shipped", shipped), ("hold-out", holdout),
                             ("hold-out 2", holdout2), ("hold-out 3", holdout3)) if s))
