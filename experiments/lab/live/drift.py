"""How far one instance's costs move within a campaign, and what that does to the simulator.

    experiments/live/calibration.py drift DATA_DIR OUT_DIR [--faultline BIN] [--jobs N]

DATA_DIR is a campaign made in passes (`campaign.sh replay` REPEATS: pass N writes TRACE-POLICY-BUDGET.rN
.json) with a per-machine calibration before the first pass and after each
(campaign.sh calibrate, then recalibrate: profile/calibration/PROFILE-atK.json). Each calibration
alone and all of them combined (`faultline calibrate --refit AT1 --combine AT2 ...`) are
refitted with BIN into OUT_DIR/profiles/, every run is simulated with each, and OUT_DIR gets
  drift.json  per profile: each run's simulated time; the |time error| median and max against
              the median of the passes (the mean of the middle two for an even count) and
              against each pass; each pass against the calibration made right before it; the
              GPU against itself (each pass against the median of the others); the live times
  drift.md    the same as tables
"""
import argparse
import concurrent.futures
import glob
import os
import re
import statistics

from lab.campaigns import load_runs, repo_relative
from lab.live import fidelity
from lab.tables import write_json

SUMMARY = (
    "a campaign made in passes: every run simulated with each pass's calibration and with all "
    "combined")


def moments(data_dir):
    """The campaign's calibrations in the order they were made: [(K, path)]."""
    found = []
    for path in glob.glob(os.path.join(data_dir, "profile", "calibration", "*-at*.json")):
        m = re.search(r"-at(\d+)\.json$", path)
        if m:
            found.append((int(m.group(1)), path))
    if len(found) < 2:
        raise SystemExit(f"drift: {data_dir}/profile/calibration/: expected two or more "
                         "calibrations PROFILE-atK.json (campaign.sh calibrate, then recalibrate)")
    return sorted(found)


def profiles(data_dir, out_dir, faultline):
    """{label: profile path}: each calibration alone (atK), then all combined."""
    at = moments(data_dir)
    prefix = re.sub(r"-at\d+\.json$", "", os.path.basename(at[0][1]))
    where = os.path.join(out_dir, "profiles")
    out = {f"at{k}": fidelity.refit(faultline, ["--refit", path], f"{prefix}-at{k}", where,
                                    "drift")
           for k, path in at}
    combine = ["--refit", at[0][1]]
    for _, path in at[1:]:
        combine += ["--combine", path]
    out["combined"] = fidelity.refit(faultline, combine, f"{prefix}-combined", where, "drift")
    return out


def live_times(data_dir):
    """{(trace, policy, budget): {pass: seconds}} and each run's trace path."""
    live, traces = {}, {}
    for run in load_runs(data_dir):
        key = (run["trace"], run["policy"], run["budget"])
        live.setdefault(key, {})[run["repeat"]] = run["results"]["total_time_ns"] / 1e9
        traces[key] = run["trace_path"]
    return live, traces


def errors(sim, live, passes):
    """|sim / live - 1| per run, live: the median of PASSES' times."""
    return [abs(sim[k] / statistics.median(live[k][p] for p in passes) - 1) for k in sim]


def summary(values):
    return {"median": statistics.median(values), "max": max(values)}


def analyse(live, sims):
    passes = sorted({p for times in live.values() for p in times})
    keys = sorted(k for k in live if set(live[k]) == set(passes))
    out = {"passes": passes, "runs": len(keys), "profiles": {}}
    for label, sim in sims.items():
        sim = {k: sim[k] for k in keys}
        out["profiles"][label] = {
            "against_median_of_passes": summary(errors(sim, live, passes)),
            "against_each_pass": {p: summary(errors(sim, live, [p])) for p in passes},
            "sim_s": {"/".join(map(str, k)): round(v, 4) for k, v in sim.items()}}
    # Each pass priced by the calibration made right before it (atP).
    before = [e for p in passes if f"at{p}" in sims
              for e in errors({k: sims[f"at{p}"][k] for k in keys}, live, [p])]
    out["each_pass_with_the_calibration_before_it"] = summary(before)
    itself = [abs(live[k][p] / statistics.median(live[k][q] for q in passes if q != p) - 1)
              for k in keys for p in passes]
    out["gpu_against_itself"] = summary(itself)
    out["live_s"] = {"/".join(map(str, k)): [round(live[k][p], 4) for p in passes] for k in keys}
    return out


def pct(x):
    return f"{100 * x:.1f}%"


def markdown(result):
    passes = result["passes"]
    lines = [f"{result['runs']} runs, {len(passes)} passes. |time error| of the simulated times "
             "against the median of the passes, and against each pass (median / max):", "",
             "| profile | against the median | " + " | ".join(f"pass {p}" for p in passes) + " |",
             "|---|---|" + "---|" * len(passes)]
    for label, p in result["profiles"].items():
        m = p["against_median_of_passes"]
        each = " | ".join(f"{pct(p['against_each_pass'][q]['median'])} / "
                          f"{pct(p['against_each_pass'][q]['max'])}" for q in passes)
        lines.append(f"| {label} | {pct(m['median'])} / {pct(m['max'])} | {each} |")
    b, g = result["each_pass_with_the_calibration_before_it"], result["gpu_against_itself"]
    lines += ["", f"Each pass with the calibration made right before it: {pct(b['median'])} / "
              f"{pct(b['max'])}. The GPU against itself (each pass against the median of the "
              f"others): {pct(g['median'])} / {pct(g['max'])}.", "",
              "| run | " + " | ".join(f"pass {p} (s)" for p in passes) + " |",
              "|---|" + "---|" * len(passes)]
    for run, times in result["live_s"].items():
        lines.append(f"| {run} | " + " | ".join(f"{t:.3f}" for t in times) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--faultline", default="build/faultline")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    found = profiles(args.data_dir, args.out_dir, args.faultline)
    live, traces = live_times(args.data_dir)
    jobs = [(label, key) for label in found for key in live]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda j: fidelity.simulate(
            args.faultline, found[j[0]], traces[j[1]], j[1][1], j[1][2]), jobs))
    sims = {}
    for (label, key), sim in zip(jobs, done):
        if "error" in sim:
            raise SystemExit(f"drift: simulating {key} with {label}: {sim['error']}")
        sims.setdefault(label, {})[key] = sim["results"]["total_time_ns"] / 1e9
    result = {"campaign": repo_relative(os.path.abspath(args.data_dir)),
              "profiles_fitted_by": args.faultline, **analyse(live, sims)}
    write_json(os.path.join(args.out_dir, "drift.json"), result)
    with open(os.path.join(args.out_dir, "drift.md"), "w") as f:
        f.write(markdown(result))
    print(markdown(result))
