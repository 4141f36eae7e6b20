"""Which per-machine costs carry a difference between instances, and which move as much between
two calibrations of one instance minutes apart.

    experiments/live/calibration.py noise [--gpu GPU] [--write] [--faultline BIN]
    experiments/live/calibration.py noise [--gpu GPU] --calibrations CAL.json...

Within: the campaigns that calibrated their instance more than once (profile/calibration/
NAME-atK.json: campaign.sh calibrate, then recalibrate), each calibration refitted alone with
the GPU model's shipped fault path as it is now (`calibrate --refit ATK --from GPU`, as
fidelity.py refits a campaign's profile). Across: the per-machine profiles the reports of the
instances' campaigns simulate with (results.py CAMPAIGNS "instances"). Per cost, the coefficient
of variation (standard deviation over mean) of each: within, the root mean square over the
instances of each one's own; across, over the instances' values. A cost whose across value
stands well above its within value differs between instances; one whose within value is as
large moves with the moment, and one calibration reads it as noise. Costs the per-machine
calibration keeps from the shipped profile (its fault path) are left out, and costs of one value
everywhere (not measured per machine). Writes GPU.json and
GPU.md into experiments/live/reports/calibration-noise/ with --write (else
out/live/calibration-noise/).
"""
import argparse
import glob
import os
import statistics
import tempfile

from lab.campaigns import read_json
from lab.live import cost_swap, fidelity, results, speeds
from lab.paths import REPO, live_study_dir
from lab.tables import write_json

SUMMARY = "each per-machine cost's variation between calibrations of one instance and across instances"


def scalar(value):
    """A cost's value as one number: a bandwidth curve's first point."""
    return value[0][1] if isinstance(value, list) else value


def cv(values):
    """Standard deviation over mean; None under two values or at a mean of 0."""
    if len(values) < 2 or not statistics.fmean(values):
        return None
    return statistics.stdev(values) / abs(statistics.fmean(values))


def refit_alone(faultline, calibration, gpu, out_dir):
    """The costs of one calibration refitted with GPU's shipped fault path."""
    name = os.path.basename(calibration)[:-len(".json")]
    path = fidelity.refit(faultline, ["--refit", calibration, "--from", gpu,
                                      "--keep-fault-path"], name, out_dir,
                          "calibration_noise")
    profile = read_json(path, "calibration_noise")
    return cost_swap.costs(profile, read_json(
        os.path.join(out_dir, "links", profile["host_link"] + ".json"), "calibration_noise"))


def repeated(gpu):
    """{campaign: [calibration paths]} of the campaigns with two calibrations or more, one
    campaign per instance."""
    out, seen = {}, set()
    for folder in sorted(glob.glob(os.path.join(results.LIVE, "data", gpu + "-*"))):
        atk = sorted(glob.glob(os.path.join(folder, "profile", "calibration", "*-at[0-9]*.json")))
        instance = speeds.instance_of(os.path.basename(folder))
        if len(atk) >= 2 and instance not in seen:
            seen.add(instance)
            out[os.path.basename(folder)] = atk
    return out


def kept_costs(calibration):
    """The costs a per-machine calibration keeps from the shipped profile."""
    doc = read_json(calibration, "calibration_noise")
    kept = doc.get("measurements", {}).get("fault_path_from", {})
    return {k for k in kept if k != "profile"} | ({"host_link.forward.overhead_ns",
                                                   "host_link.reverse.overhead_ns"}
                                                  if "copy_overhead_ns" in kept else set())


def values_of(calibrations, gpu, faultline, tmp):
    """{cost: [its value in each calibration that has it]}, each refitted alone with GPU's
    shipped fault path (into TMP)."""
    costs = [refit_alone(faultline, c, gpu, tmp) for c in calibrations]
    return {key: [scalar(c[key]) for c in costs if key in c]
            for key in sorted(set().union(*costs))}


def noise(gpu, faultline):
    """Per cost its spread within the instances calibrated more than once and across the GPU
    model's instances (the module's text)."""
    within, kept, made = {}, set(), repeated(gpu)
    with tempfile.TemporaryDirectory() as tmp:
        for campaign, calibrations in made.items():
            kept |= kept_costs(calibrations[0])
            for key, values in values_of(calibrations, gpu, faultline, tmp).items():
                within.setdefault(key, {})[campaign] = cv(values)
    across = {}
    for campaign in results.CAMPAIGNS[gpu]["instances"]:
        for key, value in cost_swap.costs(*cost_swap.report_profile(campaign)).items():
            across.setdefault(key, []).append(scalar(value))
    rows = []
    for key in sorted(within):
        if key in kept:
            continue
        own = [v for v in within[key].values() if v is not None]
        if not any(own) and not cv(across.get(key, [])):
            continue  # one value everywhere: not measured per machine (a base profile's)
        rows.append({"cost": key, "within": (statistics.fmean(v * v for v in own) ** 0.5
                                             if own else None),
                     "within_by_campaign": within[key], "across": cv(across.get(key, [])),
                     "instances": len(across.get(key, []))})
    return {"gpu": gpu, "campaigns": {c: len(a) for c, a in made.items()},
            "kept_from_shipped": sorted(kept), "costs": rows}


def markdown(doc):
    def pct(x):
        return f"{x:.0%}" if x is not None else "-"
    lines = [f"# {doc['gpu']}: per-machine costs, within one instance and across instances", "",
             "Made by `experiments/live/calibration.py noise --write`: coefficient of variation "
             "(standard deviation over mean) of each cost between calibrations of one instance "
             "minutes apart (" + ", ".join(f"`{c}` {n}" for c, n in doc["campaigns"].items())
             + " calibrations; the root mean square over them) and across the instances' "
             "per-machine profiles. Left out, kept from the shipped profile: "
             + ", ".join(doc["kept_from_shipped"]) + ".", "",
             "| cost | within one instance | across instances (n) |", "|---|---|---|"]
    for r in doc["costs"]:
        lines.append(f"| {r['cost']} | {pct(r['within'])} | {pct(r['across'])} "
                     f"({r['instances']}) |")
    return "\n".join(lines + [""])


def spread_table(calibrations, gpu, faultline):
    """The Markdown table of one set of calibrations' costs: each cost's coefficient of
    variation and values (the costs kept from the shipped profile left out)."""
    with tempfile.TemporaryDirectory() as tmp:
        values = values_of(calibrations, gpu, faultline, tmp)
    kept = kept_costs(calibrations[0])
    lines = ["| cost | coefficient of variation | values |", "|---|---|---|"]
    for key, v in values.items():
        c = cv(v)
        if key not in kept and c != 0:  # exactly equal everywhere: the base's, not measured
            lines.append(f"| {key} | {f'{c:.0%}' if c is not None else '-'} | " + ", ".join(
                f"{x / 1e3:.1f} us" if key.endswith("_ns") else f"{x:.4g}" for x in v) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=sorted(results.CAMPAIGNS), action="append")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--faultline", default=os.path.join(REPO, "build", "faultline"))
    ap.add_argument("--calibrations", nargs="+", metavar="CAL.json",
                    help="instead: print the spread of these calibrations of one instance (the "
                         "first --gpu's shipped fault path)")
    args = ap.parse_args(argv)
    if not os.access(args.faultline, os.X_OK):
        raise SystemExit(f"calibration_noise: {args.faultline}: no faultline binary (build it "
                         "first)")
    if args.calibrations:
        print(spread_table(args.calibrations, (args.gpu or ["h200"])[0], args.faultline), end="")
        return
    out_dir = live_study_dir("calibration-noise", args.write)
    for gpu in args.gpu or sorted(results.CAMPAIGNS):
        doc = noise(gpu, args.faultline)
        if not doc["campaigns"]:
            print(f"{gpu}: no campaign calibrated its instance twice")
            continue
        write_json(os.path.join(out_dir, gpu + ".json"), doc)
        with open(os.path.join(out_dir, gpu + ".md"), "w") as f:
            f.write(markdown(doc))
        print(f"{gpu}: {len(doc['costs'])} costs, {len(doc['campaigns'])} campaigns")
