"""Which calibrated cost carries a miss that lies in its instance's calibration.

    experiments/live/calibration.py cost-swap [--gpu GPU] [--write] [--faultline BIN] [--jobs N]

A run beyond the time target whose simulated time left the other instances' while its live time
did not (misses.py: it lies in its calibration) is simulated again with its campaign's profile
as the report simulated it, once per calibrated cost with that cost alone set to the median of
the other instances' profiles for the same set (the host link's overhead and bandwidth each way
among them; a bandwidth curve where all share its sizes), and once with every cost so set. The
cost whose swap brings the simulated time closest to the live one carries the miss; its share
of the miss is what that swap closes. Writes GPU.json and GPU.md per GPU model into
experiments/live/reports/cost-swap/ with --write (else out/live/cost-swap/); results.py reads
the JSON into the misses' table.
"""
import argparse
import concurrent.futures
import copy
import json
import os
import statistics
import tempfile

import lab.sim
from lab.campaigns import load_manifest, read_json
from lab.live import fidelity, misses, results
from lab.paths import REPO, live_study_dir
from lab.sim import replayed_trace
from lab.tables import write_json

SUMMARY = (
    "each miss lying in its calibration simulated with each cost swapped for the other "
    "instances' median")

NOT_COSTS = {"memory_bytes"}  # the GPU's size, not a calibrated cost
LINK = "host_link."


def sim_config(campaign):
    """The run config (less trace, policy and budget) the campaign's report simulated with."""
    path = os.path.join(results.LIVE, "reports", campaign, "summary.json")
    summary = read_json(path, "cost_swap")
    if not isinstance(summary.get("sim_config"), dict):
        raise SystemExit(f"cost_swap: {path}: expected fidelity.py's summary with a sim_config")
    return summary["sim_config"]


def calibrated(campaign):
    """Whether the campaign's report simulated with its instance's own profile (not a shipped
    one, named without a host link)."""
    return "host_link" in sim_config(campaign)


def report_profile(campaign):
    """(GPU profile, host link) documents the campaign's report simulated with."""
    config = sim_config(campaign)
    if "host_link" not in config:  # a shipped profile, by its name
        shipped = os.path.join(REPO, "configs")
        gpu = read_json(os.path.join(shipped, "gpus", config["gpu"] + ".json"), "cost_swap")
        return gpu, read_json(os.path.join(shipped, "links", gpu["host_link"] + ".json"),
                                     "cost_swap")
    return tuple(read_json(os.path.join(REPO, config[key]), "cost_swap")
                 for key in ("gpu", "host_link"))


def costs(gpu, link):
    """{cost name: value} of a profile: the GPU's numeric costs and the host link's overhead and
    bandwidth curve each way (LINK + "forward.overhead_ns", ...)."""
    out = {k: v for k, v in gpu.items()
           if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in NOT_COSTS}
    for way in ("forward", "reverse"):
        for key in ("overhead_ns", "bandwidth_gbps"):
            if key in link.get(way, {}):
                out[f"{LINK}{way}.{key}"] = link[way][key]
    return out


def median_cost(values):
    """The median of the others' values of one cost: a number (rounded to an integer where all
    are integers, half to even), or per point of bandwidth curves that share their sizes; None
    where they do not."""
    if all(isinstance(v, (int, float)) for v in values):
        m = statistics.median(values)
        return round(m) if all(isinstance(v, int) for v in values) else m
    sizes = [[p[0] for p in v] for v in values]
    if any(s != sizes[0] for s in sizes):
        return None
    return [[size, statistics.median(v[i][1] for v in values)] for i, size in enumerate(sizes[0])]


def with_costs(gpu, link, changes, folder):
    """A run config's machine keys for the profile with CHANGES ({cost: value}) applied,
    written into FOLDER."""
    gpu, link = copy.deepcopy(gpu), copy.deepcopy(link)
    for key, value in changes.items():
        if key.startswith(LINK):
            way, field = key[len(LINK):].split(".")
            link[way][field] = value
        else:
            gpu[key] = value
    os.makedirs(folder, exist_ok=True)
    paths = {"gpu": os.path.join(folder, "gpu.json"),
             "host_link": os.path.join(folder, "link.json")}
    for key, doc in (("gpu", gpu), ("host_link", link)):
        with open(paths[key], "w") as f:
            json.dump(doc, f)
    return paths


def trace_of(campaign, trace, policy, budget):
    """The trace file the campaign's run replayed (at the campaign's traces_revision)."""
    data = os.path.join(results.LIVE, "data", campaign)
    runs, _ = fidelity.read_live(data)
    for r in runs:
        if (r["trace"], r["policy"], r["budget"]) == (trace, policy, budget):
            return replayed_trace(r["trace_path"], r["revision"],
                                  load_manifest(data).get("traces_revision"))
    raise SystemExit(f"cost_swap: {data}: no live run of {trace} {policy} {budget}")


def swap_run(miss, siblings, faultline, jobs, tmp):
    """The miss simulated with its profile, with each cost at the others' median, and with all."""
    gpu, link = report_profile(miss["campaign"])
    here = costs(gpu, link)
    others = [costs(*report_profile(s)) for s in siblings
              if s != miss["campaign"] and calibrated(s)]
    medians = {}
    for key, value in here.items():
        values = [o[key] for o in others if key in o]
        m = median_cost(values) if values else None
        if m is not None and m != value:
            medians[key] = m
    trace = trace_of(miss["campaign"], miss["trace"], miss["policy"], miss["budget"])
    points = [("as calibrated", {})] + [(k, {k: v}) for k, v in sorted(medians.items())] + \
        [("every cost", medians)]

    def simulate(i_point):
        i, (_, changes) = i_point
        machine = with_costs(gpu, link, changes, os.path.join(tmp, miss["campaign"], str(i)))
        config = {**fidelity.sim_config(machine["gpu"], miss["policy"], miss["budget"]),
                  "host_link": machine["host_link"]}
        doc = lab.sim.simulate(trace, config, faultline)
        return doc["results"]["total_time_ns"] / 1e9, doc["faultline"]["git_revision"]

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        sims = list(pool.map(simulate, enumerate(points)))
    times = [t for t, _ in sims]
    live = miss["live_s"]
    base = times[0]
    if abs(base / miss["sim_s"] - 1) > 1e-6:  # the miss is the report's: it must reproduce
        raise SystemExit(f"cost_swap: {miss['campaign']} {miss['trace']} {miss['policy']} "
                         f"{miss['budget']:g}: simulated {base:.6f} s, its report "
                         f"{miss['sim_s']:.6f} s: regenerate the report (fidelity.py report) first")
    swaps = [{"cost": name, "here": here[name], "others": medians[name], "sim_s": t,
              "time_error": t / live - 1,
              "closes": (abs(base - live) - abs(t - live)) / abs(base - live)}
             for (name, _), t in zip(points[1:-1], times[1:-1])]
    swaps.sort(key=lambda s: -s["closes"])
    return {"set": miss["set"], "campaign": miss["campaign"], "trace": miss["trace"],
            "policy": miss["policy"], "budget": miss["budget"], "live_s": live, "sim_s": base,
            "time_error": base / live - 1, "others": len(others),
            "every_cost_at_others": {"sim_s": times[-1], "time_error": times[-1] / live - 1},
            "swaps": swaps, "sim_revision": sims[0][1]}


def calibration_misses(gpu):
    """(miss, sibling campaigns) of each of the GPU's misses that lie in its calibration."""
    c = results.CAMPAIGNS[gpu]
    siblings = {label: c.get(key, []) for label, _, key in results.SETS}
    out = []
    for m in results.gpu_misses(gpu, c, misses.load_causes(repo=REPO)):
        if m["lies_in"] == "calibration":
            rows = results.report(m["campaign"])[1]
            row = next(r for r in rows if (r["trace"], r["policy"], float(r["budget"])) ==
                       (m["trace"], m["policy"], m["budget"]))
            out.append(({**m, "live_s": float(row["live_s"]), "sim_s": float(row["sim_s"])},
                        siblings[m["set"]]))
    return out


def markdown(gpu, runs):
    lines = [f"# {gpu}: the calibrated cost that carries each miss lying in its calibration", "",
             "Made by `experiments/live/calibration.py cost-swap --write`: each run simulated with its "
             "campaign's profile, with one cost at a time set to the median of the other "
             "instances' own profiles for the same set (n), and with every cost so set; the "
             "three swaps that close most of the miss.", ""]
    if not runs:
        return "\n".join(lines + ["No miss lies in its calibration.", ""])
    lines += ["| set | run | campaign | error | every cost at the others' (n) | swaps that close "
              "most (error after) |", "|---|---|---|---|---|---|"]
    for r in runs:
        top = "; ".join(f"{misses.cost_text(s)}: {s['time_error']:+.1%} "
                        f"({s['closes']:.0%} of the miss)"
                        for s in r["swaps"][:3] if s["closes"] > 0) or "none closes it"
        lines.append(f"| {r['set']} | {r['trace']} {r['policy']} {r['budget']:.0%} | "
                     f"`{r['campaign']}` | {r['time_error']:+.1%} | "
                     f"{r['every_cost_at_others']['time_error']:+.1%} ({r['others']}) | "
                     f"{top} |")
    return "\n".join(lines + [""])


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", choices=sorted(results.CAMPAIGNS), action="append")
    ap.add_argument("--write", action="store_true",
                    help="into experiments/live/reports/cost-swap/ (else out/live/cost-swap/)")
    ap.add_argument("--faultline", default=os.path.join(REPO, "build", "faultline"))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    if not os.access(args.faultline, os.X_OK):
        raise SystemExit(f"cost_swap: {args.faultline}: no faultline binary (build it first)")
    out_dir = live_study_dir("cost-swap", args.write)
    for gpu in args.gpu or sorted(results.CAMPAIGNS):
        with tempfile.TemporaryDirectory() as tmp:
            runs = [swap_run(m, s, args.faultline, args.jobs, tmp)
                    for m, s in calibration_misses(gpu)]
        write_json(os.path.join(out_dir, f"{gpu}.json"),
                          {"gpu": gpu, "runs": runs})
        with open(os.path.join(out_dir, f"{gpu}.md"), "w") as f:
            f.write(markdown(gpu, runs))
        print(f"{gpu}: {len(runs)} runs")
