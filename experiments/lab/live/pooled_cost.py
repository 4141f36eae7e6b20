"""Whether one calibrated cost is worth measuring on each machine: every campaign's runs
simulated again with that cost alone at one value for all instances, against the campaign's
own calibration.

    experiments/live/calibration.py pooled-cost --cost NAME [--value V] [--gpu GPU]
                                            [--policies P,P] [--traces T,T]
                                            [--write] [--faultline BIN] [--jobs N]

For each GPU model, each campaign the results read (results.py CAMPAIGNS: the instances and the
three hold-out sets), each run under the given policies (default: all) is simulated with the
profile its report used and the cost NAME set to the GPU model's shipped profile's value
(configs/gpus/GPU.json), or to V; the run's error as calibrated comes from the report. A cost
whose per-machine value follows what the instance pays lowers the errors as measured; one whose
benchmark reads the moment's noise lowers them at the pooled value; a cost no instance measured
(a shipped profile's stand-in) shows what the runs hinge on. With --traces only those traces'
runs, each listed too. Writes NAME[-at-V][-TRACES].json and .md into
experiments/live/reports/pooled-cost/ with --write (else out/live/pooled-cost/): per set and
GPU, the median |time error| both ways over the same runs, and per campaign.
"""
import argparse
import collections
import concurrent.futures
import os
import statistics
import tempfile

import lab.sim
from lab.campaigns import read_json
from lab.live import cost_swap, fidelity, results
from lab.paths import REPO, live_study_dir
from lab.tables import write_json

SUMMARY = "every campaign simulated with one cost at one value for every instance"


def shipped_value(gpu, cost):
    """COST's value in the GPU model's shipped profile (configs/gpus/GPU.json, its host link)."""
    doc = read_json(os.path.join(REPO, "configs", "gpus", gpu + ".json"),
                           "pooled_cost")
    link = read_json(os.path.join(REPO, "configs", "links",
                                         doc["host_link"] + ".json"), "pooled_cost")
    known = cost_swap.costs(doc, link)
    if cost not in known:
        raise SystemExit(f"pooled_cost: configs/gpus/{gpu}.json: no cost {cost}; expected one of "
                         + ", ".join(sorted(known)))
    return known[cost]


# One run: its live time, simulated as calibrated (its report's), at the pooled value (afresh).
Run = collections.namedtuple("Run", "trace policy budget live_s sim_s pooled_s revision")


def campaign_runs(campaign, policies, cost, value, faultline, jobs, tmp, traces=()):
    """[Run] of the campaign's timed runs under POLICIES and of TRACES (every one where empty),
    COST at VALUE; [] where its report simulated with a shipped profile, not its instance's
    own."""
    if not cost_swap.calibrated(campaign):
        return []
    gpu, link = cost_swap.report_profile(campaign)
    machine = cost_swap.with_costs(gpu, link, {cost: value}, os.path.join(tmp, campaign))
    rows = [r for r in results.report(campaign)[1]
            if r["time_error"] and (not policies or r["policy"] in policies)
            and (not traces or r["trace"] in traces)]

    def simulate(row):
        budget = float(row["budget"])
        trace = cost_swap.trace_of(campaign, row["trace"], row["policy"], budget)
        config = {**fidelity.sim_config(machine["gpu"], row["policy"], budget),
                  "host_link": machine["host_link"]}
        doc = lab.sim.simulate(trace, config, faultline)
        return doc["results"]["total_time_ns"] / 1e9, doc["faultline"]["git_revision"]

    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        pooled = list(pool.map(simulate, rows))
    return [Run(r["trace"], r["policy"], float(r["budget"]), float(r["live_s"]), float(r["sim_s"]),
                p, revision) for r, (p, revision) in zip(rows, pooled)]


def medians(runs):
    own = [abs(r.sim_s / r.live_s - 1) for r in runs]
    pooled = [abs(r.pooled_s / r.live_s - 1) for r in runs]
    return {"runs": len(runs), "own_median_abs_time_error": statistics.median(own),
            "pooled_median_abs_time_error": statistics.median(pooled),
            "own_max_abs_time_error": max(own), "pooled_max_abs_time_error": max(pooled)}


def markdown(doc):
    options = "".join(f" --{k} {','.join(doc[k]) if isinstance(doc[k], list) else doc[k]}"
                      for k in ("value", "policies", "traces") if doc.get(k))
    lines = [f"# {doc['cost']}: each instance's own value against one for all", "",
             f"Made by `experiments/live/calibration.py pooled-cost --cost {doc['cost']}{options} --write`: "
             "every campaign's runs"
             + (f" of {', '.join(doc['traces'])}" if doc.get("traces") else "")
             + (f" under {', '.join(doc['policies'])}" if doc["policies"] else "")
             + " simulated with its own calibration and with " + doc["cost"] + " at "
             + (str(doc["value"]) if doc.get("value") is not None else
                "the shipped profile's value")
             + ". Median / max |time error|.", "",
             "| GPU | set | pooled value | campaigns | runs | own calibration | at the pooled "
             "value |",
             "|---|---|---|---|---|---|---|"]
    for gpu, sets in doc["gpus"].items():
        for label, s in sets["sets"].items():
            lines.append(f"| {gpu} | {label} | {sets['value']} | {s['campaigns']} | {s['runs']} | "
                         f"{s['own_median_abs_time_error']:.1%} / {s['own_max_abs_time_error']:.1%}"
                         f" | {s['pooled_median_abs_time_error']:.1%} / "
                         f"{s['pooled_max_abs_time_error']:.1%} |")
    # With --traces a campaign's "runs" lists them; without, it is medians()'s count.
    listed = [(gpu, name, r) for gpu, sets in doc["gpus"].items()
              for name, c in sets["campaigns"].items()
              if isinstance(c.get("runs"), list) for r in c["runs"]]
    if listed:
        lines += ["", "| GPU | campaign | run | live | own calibration | at the pooled value |",
                  "|---|---|---|---|---|---|"]
        for gpu, name, r in listed:
            lines.append(f"| {gpu} | `{name}` | {r['trace']} {r['policy']} {r['budget']:.0%} | "
                         f"{r['live_s']:.2f} s | {r['sim_s'] / r['live_s'] - 1:+.1%} | "
                         f"{r['pooled_s'] / r['live_s'] - 1:+.1%} |")
    return "\n".join(lines + [""])


def gpu_sets(gpu, args, policies):
    """The GPU model's sets: per set its campaigns' runs summed up (medians), per campaign its
    own; the simulator revisions that made them."""
    c = results.CAMPAIGNS[gpu]
    value = shipped_value(gpu, args.cost) if args.value is None else args.value
    traces = [t for t in args.traces.split(",") if t]
    made, sets = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, _, key in results.SETS:
            for campaign in c.get(key, []):
                if campaign not in made:
                    made[campaign] = campaign_runs(campaign, policies, args.cost, value,
                                                   args.faultline, args.jobs, tmp, traces)
            runs = [r for campaign in c.get(key, []) for r in made[campaign]]
            if runs:
                sets[label] = {"campaigns": sum(bool(made[x]) for x in c.get(key, [])),
                               **medians(runs)}
            print(f"{gpu} {label}: {sets.get(label)}", flush=True)
    def campaign(runs):  # with --traces, each run listed too
        listed = [{k: v for k, v in r._asdict().items() if k != "revision"} for r in runs]
        return {**medians(runs), **({"runs": listed} if traces else {})}

    return {"value": value, "sets": sets,
            "campaigns": {name: campaign(runs) for name, runs in made.items() if runs},
            "revisions": sorted({r.revision for runs in made.values() for r in runs})}


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--cost", required=True)
    ap.add_argument("--value", type=float,
                    help="the value for every instance (default: the shipped profile's)")
    ap.add_argument("--traces", default="", help="comma-separated (default: every trace)")
    ap.add_argument("--gpu", choices=sorted(results.CAMPAIGNS), action="append")
    ap.add_argument("--policies", default="", help="comma-separated (default: every policy)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--faultline", default=os.path.join(REPO, "build", "faultline"))
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    policies = [p for p in args.policies.split(",") if p]
    unknown = [p for p in policies if p not in fidelity.POLICIES]
    if unknown:
        raise SystemExit(f"pooled_cost: --policies: unknown {', '.join(unknown)}; expected "
                         f"some of {', '.join(fidelity.POLICIES)}")
    if not os.access(args.faultline, os.X_OK):
        raise SystemExit(f"pooled_cost: {args.faultline}: no faultline binary (build it first)")
    if args.value is not None and args.value == int(args.value):
        args.value = int(args.value)  # ns and counts are integers in a profile
    doc = {"cost": args.cost, **({"value": args.value} if args.value is not None else {}),
           "policies": policies,
           **({"traces": args.traces.split(",")} if args.traces else {}), "gpus": {}}
    revisions = set()
    for gpu in args.gpu or sorted(results.CAMPAIGNS):
        doc["gpus"][gpu] = gpu_sets(gpu, args, policies)
        revisions |= set(doc["gpus"][gpu].pop("revisions"))
    doc["sim_revision"] = sorted(revisions)
    out_dir = live_study_dir("pooled-cost", args.write)
    name = (args.cost + (f"-at-{args.value}" if args.value is not None else "")
            + (f"-{args.traces.replace(',', '-')}" if args.traces else ""))
    write_json(os.path.join(out_dir, name + ".json"), doc)
    with open(os.path.join(out_dir, name + ".md"), "w") as f:
        f.write(markdown(doc))
