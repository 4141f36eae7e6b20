"""One profile for an instance nobody calibrated: each per-machine cost the median over the GPU
model's calibrated instances, the fault path the shipped profile's (every per-machine calibration
keeps it), and how well it predicts each instance's runs when that instance is left out.

    experiments/live/calibration.py median-profile [--gpu h200] [--write] [--evaluate]

--write   configs/gpus/GPU-median.json and configs/links/GPU-median-host.json from every instance
          (without it: into out/live/median-profile/GPU/profile/)
--evaluate each timed campaign simulated with the median over the other instances (the instance
          it ran on left out, so the profile has never seen that machine), against its own
          calibration and the shipped profile: experiments/live/reports/median-profile/GPU/
          (summary.json, README.md; with --write) or out/live/median-profile/GPU/

The instances: campaigns with a per-machine calibration (campaign.sh; `fault_path_from` in its
measurements), one profile per instance, as its fidelity report used it (refitted with the
shipped fault path where it changed, reports/CAMPAIGN/profile/), without the costs no benchmark
of its measured (kept from its base profile by calibrate, or filled from the shipped profile by
its report: MEASURED_BY, filled_from_shipped_profile). A full chunk's eviction cost is taken whole
(eviction_ns + 32 eviction_page_ns) and split again at the median cost per page, so instances
whose split gave no page cost count too.
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys

from lab.campaigns import load_manifest, read_json
from lab.live import cost_swap, speeds
from lab.paths import REPO
from lab.tables import write_json

SUMMARY = (
    "configs/gpus/GPU-median.json from the calibrated instances; --evaluate: each campaign with "
    "the others' median")

LIVE = os.path.join(REPO, "experiments", "live")
# Kept from the shipped profile: the fault path and the host link's copy overhead, fitted with it
# (every per-machine calibration keeps both), and what none measures (memory size, the peer path).
FAULT_PATH = {"batch_fixed_ns", "per_fault_ns", "per_vablock_ns", "page_table_update_ns",
              "populate_ns", "fault_migrate_ns", "fault_parallelism"}
NOT_MEASURED = {"memory_bytes", "peer_eviction_ns", "peer_fault_migrate_ns",
                "host_link.forward.overhead_ns", "host_link.reverse.overhead_ns"}
PAGES_PER_CHUNK = 32  # 64 KB pages in a 2 MB chunk
# The costs a later benchmark measures, by the measurements' key (and a key within it): a
# calibration without it kept the base profile's value (calibrate_fit.cc, keep_from_base), which
# is no instance's.
MEASURED_BY = {"eviction_run_ns": ("eviction_runs",), "eviction_page_ns": ("eviction_runs",),
               "eviction_populate_ns": ("eviction_runs", "fresh_ns"), "swap_extra_ns": ("swap",),
               "discarded_fault_ns": ("discarded_touch",),
               "discarded_resident_fault_ns": ("discarded_touch",),
               "discarded_prefetch_ns": ("discarded_touch", "prefetch_discarded_ns"),
               "host_populate_ns": ("host_populate",)}


def calibrated_campaigns(gpu):
    """Every campaign of GPU model `gpu` with a per-machine calibration and a report, in name
    order: {campaign, instance, unmeasured (the costs its calibration kept from its base profile
    or its report took from the shipped one: measured by no benchmark there), timed_runs}."""
    out = []
    for campaign in sorted(os.listdir(os.path.join(LIVE, "data"))):
        folder = os.path.join(LIVE, "data", campaign)
        summary_path = os.path.join(LIVE, "reports", campaign, "summary.json")
        if not campaign.startswith(gpu + "-") or not os.path.exists(summary_path):
            continue
        profile = load_manifest(folder).get("gpu_profile", "")
        if not profile.endswith(".json"):
            continue
        name = os.path.basename(profile)[:-len(".json")]
        calibration = os.path.join(folder, os.path.dirname(os.path.dirname(profile)),
                                   "calibration", name + ".json")
        measurements = read_json(calibration, "median_profile")["measurements"]
        if "fault_path_from" not in measurements:
            continue  # a full calibration: its fault path is its own
        summary = read_json(summary_path, "median_profile")
        unmeasured = [k for k, (bench, *within) in MEASURED_BY.items()
                      if bench not in measurements or any(w not in measurements[bench]
                                                          for w in within)]
        out.append({"campaign": campaign, "instance": speeds.instance_of(campaign),
                    "unmeasured": sorted(set(unmeasured)
                                         | set(summary.get("filled_from_shipped_profile", []))),
                    "timed_runs": summary.get("timed_runs") or 0})
    return out


def instance_costs(campaigns):
    """{instance: {cost: value}} from each instance's first campaign, its profile as its report
    simulated with it (cost_swap.costs' names): the costs a per-machine calibration measures,
    with a full chunk's eviction whole (eviction_full_ns)."""
    out = {}
    for c in campaigns:
        if c["instance"] in out:
            continue
        every = cost_swap.costs(*cost_swap.report_profile(c["campaign"]))
        mine = {k: v for k, v in every.items()
                if k not in FAULT_PATH | NOT_MEASURED and k not in c["unmeasured"]}
        mine["eviction_full_ns"] = (mine.pop("eviction_ns")
                                    + PAGES_PER_CHUNK * every.get("eviction_page_ns", 0))
        out[c["instance"]] = mine
    return out


def median_profile(gpu, costs, name, leave_out=None):
    """(GPU profile, host link) named `name`: the shipped profile of `gpu` with each measured
    cost the median over the instances in `costs` but `leave_out` (cost_swap.median_cost)."""
    used = {i: c for i, c in costs.items() if i != leave_out}
    keys = sorted({k for c in used.values() for k in c})
    med = {k: cost_swap.median_cost([c[k] for c in used.values() if k in c]) for k in keys}
    if any(v is None for v in med.values()):
        raise SystemExit("median_profile: the instances' bandwidth curves differ in their sizes: "
                         + ", ".join(k for k, v in med.items() if v is None))
    shipped = os.path.join(REPO, "configs")
    profile = read_json(os.path.join(shipped, "gpus", gpu + ".json"), "median_profile")
    link = read_json(os.path.join(shipped, "links", profile["host_link"] + ".json"),
                            "median_profile")
    page = med.pop("eviction_page_ns", 0)
    profile.pop("eviction_page_ns", None)
    profile["eviction_ns"] = max(0, round(med.pop("eviction_full_ns")) - PAGES_PER_CHUNK * page)
    if page:
        profile["eviction_page_ns"] = page
    for key, value in med.items():
        if key.startswith(cost_swap.LINK):
            way, field = key[len(cost_swap.LINK):].split(".")
            link[way][field] = value
        else:
            profile[key] = value
    instances = ", ".join(sorted(used))
    profile.update(name=name, host_link=name + "-host", sources=[
        f"every cost a per-machine calibration measures: the median over {len(used)} {gpu.upper()} "
        f"instances' calibrations ({instances}; experiments/live/calibration.py median-profile); a full "
        "chunk's eviction taken whole and split at the median cost per page",
        f"the fault path, the memory size and the peer path: the shipped profile {gpu} "
        "(every per-machine calibration keeps its fault path)"])
    link.update(name=name + "-host", sources=[
        f"bandwidth each way: the median over the same {len(used)} instances' curves, per point; "
        f"overhead_ns: the shipped profile's (fitted with its fault path)"])
    return dict(sorted(profile.items())), link


def write_profile(folder, profile, link):
    """FOLDER/gpus/NAME.json and FOLDER/links/NAME-host.json; returns the profile's path."""
    path = os.path.join(folder, "gpus", profile["name"] + ".json")
    for sub in ("gpus", "links"):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
    write_json(path, profile)
    write_json(os.path.join(folder, "links", link["name"] + ".json"), link)
    return path


def errors(path):
    with open(path) as f:
        return [float(r["time_error"]) for r in csv.DictReader(f) if r["time_error"]]


def stats(errs):
    return {"median_abs_time_error": statistics.median(map(abs, errs)),
            "max_abs_time_error": max(map(abs, errs)),
            "median_time_error": statistics.median(errs)}


def evaluate(gpu, campaigns, costs, out_dir, faultline):
    """Each timed campaign simulated with the median profile of the other instances."""
    rows = []
    for c in campaigns:
        shipped = os.path.join(LIVE, "reports", c["campaign"], "shipped-profile", "fidelity.csv")
        if not c["timed_runs"] or not os.path.exists(shipped):
            continue
        folder = os.path.join(out_dir, "runs", c["campaign"])
        profile, link = median_profile(gpu, costs, f"{gpu}-median", leave_out=c["instance"])
        path = write_profile(os.path.join(folder, "profile"), profile, link)
        subprocess.run([sys.executable, os.path.join(LIVE, "fidelity.py"), "simulate",
                        os.path.join(LIVE, "data", c["campaign"]), folder, "--gpu", path,
                        "--faultline", faultline], check=True, capture_output=True)
        rows.append({"campaign": c["campaign"], "instance": c["instance"],
                     "runs": len(errors(os.path.join(folder, "fidelity.csv"))),
                     "own": stats(errors(os.path.join(LIVE, "reports", c["campaign"],
                                                      "fidelity.csv"))),
                     "shipped": stats(errors(shipped)),
                     "median_of_others": stats(errors(os.path.join(folder, "fidelity.csv")))})
        print(f"median_profile: {c['campaign']} done", file=sys.stderr, flush=True)
    return rows


def overall(rows, pick=lambda r: True):
    chosen = [r for r in rows if pick(r)]
    out = {"campaigns": len(chosen)}
    for way in ("own", "shipped", "median_of_others"):
        out[way] = {"median_of_medians": statistics.median(
                        r[way]["median_abs_time_error"] for r in chosen),
                    "median_of_signed_medians": statistics.median(
                        r[way]["median_time_error"] for r in chosen),
                    "median_of_max": statistics.median(r[way]["max_abs_time_error"] for r in chosen)}
    out["closer_than_shipped"] = sum(r["median_of_others"]["median_abs_time_error"]
                                     < r["shipped"]["median_abs_time_error"] for r in chosen)
    out["further_than_shipped"] = sum(r["median_of_others"]["median_abs_time_error"]
                                      > r["shipped"]["median_abs_time_error"] for r in chosen)
    return out


def readme(gpu, summary):
    pct = "{:.1%}".format
    lines = [f"# The median of the other instances against the shipped profile ({gpu.upper()})", "",
             "Made by `experiments/live/calibration.py median-profile --gpu " + gpu + " --evaluate --write`: "
             "each campaign simulated with a profile whose per-machine costs are the median over "
             f"the other {gpu.upper()} instances' calibrations (its own instance left out: the "
             "profile has never seen the machine), beside its own calibration and the shipped "
             "profile. Median / max |time error| (signed median).", "",
             "| campaign | runs | own calibration | shipped profile | median of the other instances |",
             "|---|---|---|---|---|"]
    for r in summary["campaigns"]:
        cells = [f"{pct(r[w]['median_abs_time_error'])} / {pct(r[w]['max_abs_time_error'])} "
                 f"({r[w]['median_time_error']:+.1%})" for w in ("own", "shipped", "median_of_others")]
        lines.append(f"| `{r['campaign']}` | {r['runs']} | " + " | ".join(cells) + " |")
    lines.append("")
    for label, key in (("Every campaign", "all"), ("The hold-out campaigns", "holdout")):
        o = summary[key]
        lines.append(f"{label} ({o['campaigns']}): median of the medians own "
                     f"{pct(o['own']['median_of_medians'])}, shipped "
                     f"{pct(o['shipped']['median_of_medians'])}, median of the others "
                     f"{pct(o['median_of_others']['median_of_medians'])}; signed "
                     f"{o['shipped']['median_of_signed_medians']:+.1%} shipped, "
                     f"{o['median_of_others']['median_of_signed_medians']:+.1%} median of the "
                     f"others; closer than the shipped profile in {o['closer_than_shipped']}, "
                     f"further in {o['further_than_shipped']}.")
        lines.append("")
    return "\n".join(lines)


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h200", help="GPU model: the shipped profile's name")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--evaluate", action="store_true")
    ap.add_argument("--faultline", default=os.path.join(REPO, "build", "faultline"))
    args = ap.parse_args(argv)
    campaigns = calibrated_campaigns(args.gpu)
    costs = instance_costs(campaigns)
    if len(costs) < 3:
        raise SystemExit(f"median_profile: {len(costs)} calibrated {args.gpu} instances; "
                         "need 3 or more")
    out = (os.path.join(LIVE, "reports", "median-profile", args.gpu) if args.write
           else os.path.join(REPO, "out", "live", "median-profile", args.gpu))
    profile, link = median_profile(args.gpu, costs, f"{args.gpu}-median")
    configs = os.path.join(REPO, "configs") if args.write else os.path.join(out, "profile")
    print(f"median_profile: {write_profile(configs, profile, link)} from {len(costs)} instances")
    if args.evaluate:
        rows = evaluate(args.gpu, campaigns, costs, os.path.join(REPO, "out", "live",
                                                                  "median-profile", args.gpu),
                        args.faultline)
        summary = {"gpu": args.gpu, "instances": sorted(costs), "campaigns": rows,
                   "all": overall(rows), "holdout": overall(rows, lambda r: "holdout" in r["campaign"])}
        os.makedirs(out, exist_ok=True)
        write_json(os.path.join(out, "summary.json"), summary)
        with open(os.path.join(out, "README.md"), "w") as f:
            f.write(readme(args.gpu, summary))
        a = summary["all"]
        print(f"median_profile: {a['campaigns']} campaigns, median of medians own "
              f"{a['own']['median_of_medians']:.1%}, shipped {a['shipped']['median_of_medians']:.1%}, "
              f"median of the others {a['median_of_others']['median_of_medians']:.1%}")
