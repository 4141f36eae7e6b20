"""The policy comparison: a table and figures from a sweep's results.json.

    experiments/compare/compare.py table RESULTS_JSON OUT_DIR

Writes OUT_DIR/comparison.csv, OUT_DIR/comparison.md and four figures: time normalised to no
oversubscription (ondemand at 100% capacity of the same trace), speedup over ondemand, fraction
of the oracle (oracle time / policy time), and faults and bytes moved at 50% capacity. Each
(trace, capacity) also gets `faultline bound` for the same steps, a lower bound no policy can beat
(sim/run/bound.h): the table gives every policy's fraction of it (bound / policy time). The script
fails, after writing its outputs, if a run is faster than its bound; it names the online runs
faster than the oracle (the offline policy that reads the trace, policies/oracle/; the faster of
it and its variant that discards freed blocks), a strong policy but not a bound.

The whole comparison (`experiments/compare/compare.py [--write-reports]`, run()): the sweep
configs/sweeps/real-traces.json (every policy with DeepUM's ablation x every real trace x capacity
{100, 80, 67, 50, 33}% of the footprint, 5 training steps each), then the table and figures in
out/compare/; with --write-reports also the table into experiments/compare/reports/comparison.md.
"""
import argparse
import csv
import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

from lab import steps
from lab.sim import bound
from lab.tables import pyplot, save_figure

SUMMARY = "the table and figures from a sweep's results.json"

plt = pyplot()

ABLATION = {("deepum", '{"discard_freed":false,"pre_evict":false}'): "deepum: prefetch",
            ("deepum", '{"discard_freed":false}'): "deepum: +pre-evict",
            ("deepum", "{}"): "deepum: +discard",
            ("oracle", '{"discard_freed":true}'): "oracle: +discard"}
# The offline policies: the oracle as the live fidelity runs replay it, and with the freed-block
# discard deepum and schedule also make. The better of the two at each point is the bound online
# runs are measured against.
ORACLES = ("oracle", "oracle: +discard")


def label(policy):
    params = json.dumps(policy["params"], sort_keys=True, separators=(",", ":"))
    return ABLATION.get((policy["name"], params),
                        policy["name"] + ("" if params == "{}" else " " + params))


def load(path):
    rows = []
    for p in json.load(open(path))["points"]:
        r = p["results"]
        rows.append({"trace": os.path.basename(p["point"]["trace"]).replace(".fltrace", ""),
                     "policy": label(p["point"]["policy"]),
                     "capacity": p["point"]["capacity_fraction"],
                     "iterations": p["point"]["config"].get("iterations"),
                     "time": r["total_time_ns"], "faults": r["faults"],
                     "bytes": r["bytes_host_to_gpu"] + r["bytes_gpu_to_host"],
                     "fault_stall": r["fault_stall_ns"], "compute": r["compute_ns"],
                     **{"link_" + k: v for k, v in r.get("link", {}).items()},
                     **{"waits_" + k: v for k, v in r.get("waits", {}).items()}})
    return rows


def bounds(rows, base, faultline):
    """(trace, capacity) -> faultline bound's object, under the sweep's base config and the
    points' steps."""
    keys = sorted({(r["trace"], r["capacity"], r["iterations"]) for r in rows},
                  key=lambda k: (k[0], k[1], k[2] or 0))
    def one(key):
        trace, capacity, iterations = key
        overrides = {} if iterations is None else {"iterations": iterations}
        return bound(f"traces/real/{trace}.fltrace", base, faultline,
                            capacity={"fraction_of_footprint": capacity}, **overrides)
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        return dict(zip(keys, pool.map(one, keys)))


def derive(rows, bound_of):
    by = {(r["trace"], r["policy"], r["capacity"]): r for r in rows}
    for r in rows:
        base = by[(r["trace"], "ondemand", 1.0)]["time"]
        r["normalised"] = r["time"] / base
        r["speedup"] = by[(r["trace"], "ondemand", r["capacity"])]["time"] / r["time"]
        r["of_oracle"] = min(by[(r["trace"], o, r["capacity"])]["time"] for o in ORACLES
                             if (r["trace"], o, r["capacity"]) in by) / r["time"]
        r["bound"] = bound_of[(r["trace"], r["capacity"], r["iterations"])]["lower_bound_ns"]
        r["of_bound"] = r["bound"] / r["time"]
        if r["of_bound"] > 1:
            raise SystemExit(f"compare: {r['trace']} {r['policy']} at {r['capacity']:.0%} ran in "
                             f"{r['time']} ns, below its lower bound of {r['bound']} ns")
        r["fault_stall_reduction"] = 1 - r["fault_stall"] / max(
            1, by[(r["trace"], "ondemand", r["capacity"])]["fault_stall"])
    return rows


def write_tables(rows, out):
    keys = ["trace", "policy", "capacity", "time", "normalised", "speedup", "of_oracle",
            "bound", "of_bound", "fault_stall_reduction", "faults", "bytes"]
    with open(os.path.join(out, "comparison.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    lines = ["Speedup over ondemand (fraction of the oracle bound in brackets: the faster of the "
             "oracle and the oracle with discard), by trace and GPU capacity as a fraction of the "
             "footprint.", "",
             "| trace | capacity | " + " | ".join(policies) + " |",
             "|---|---|" + "---|" * len(policies)]
    by = {(r["trace"], r["capacity"], r["policy"]): r for r in rows}
    for trace in dict.fromkeys(r["trace"] for r in rows):
        for cap in sorted({r["capacity"] for r in rows}, reverse=True):
            cells = [f"{by[(trace, cap, p)]['speedup']:.2f} ({by[(trace, cap, p)]['of_oracle']:.2f})"
                     for p in policies]
            lines.append(f"| {trace} | {cap:.0%} | " + " | ".join(cells) + " |")
    faster = faster_than_oracle(rows)
    lines += ["", f"Runs faster than the oracle: {len(faster)} of "
              f"{sum(r['policy'] not in ORACLES for r in rows)}"
              + (" (" + "; ".join(f"{r['trace']} {r['policy']} {r['capacity']:.0%}"
                                  for r in faster) + ")" if faster else "") + ".", "",
              "Fraction of the lower bound (`faultline bound`: bound / policy time; no run can "
              "exceed 1), by trace and capacity.", "",
              "| trace | capacity | bound | " + " | ".join(policies) + " |",
              "|---|---|---|" + "---|" * len(policies)]
    for trace in dict.fromkeys(r["trace"] for r in rows):
        for cap in sorted({r["capacity"] for r in rows}, reverse=True):
            cells = [f"{by[(trace, cap, p)]['of_bound']:.2f}" for p in policies]
            lines.append(f"| {trace} | {cap:.0%} | {by[(trace, cap, policies[0])]['bound'] / 1e9:.3f} s"
                         " | " + " | ".join(cells) + " |")
    lines += above_bound_lines(rows)
    open(os.path.join(out, "comparison.md"), "w").write("\n".join(lines) + "\n")


SPLIT = (("fault_stall", "kernels stalled on faults"),
         ("waits_eviction_ns", "evictions waited for"),
         ("waits_prefetch_in_flight_ns", "copies in flight waited for"),
         ("waits_migration_stream_ns", "migration stream waited for"),
         ("link_to_gpu_busy_ns", "link to the GPU"), ("link_to_host_busy_ns", "link to the host"),
         ("link_both_busy_ns", "both at once"))


def above_bound_lines(rows, capacity=0.5):
    """Where each policy's time goes beside its bound at CAPACITY: the time and the bound, the
    kernels' stall on faults, what they waited for, and the host link's busy time each way and
    both at once (results without those counts leave their cells empty)."""
    sel = [r for r in rows if r["capacity"] == capacity]
    if not sel:
        return []
    lines = ["", f"Where the time goes at {capacity:.0%} (seconds): the run's time over its lower "
             "bound; the kernels' stall on faults and, within or beside it, the evictions, the "
             "copies already in flight and the migration stream they waited for (results.waits); "
             "the time the host link carried a copy each way and both ways at once "
             "(results.link).", "",
             "| trace | policy | time | bound | time / bound | " + " | ".join(t for _, t in SPLIT)
             + " |", "|---|---|---|---|---|" + "---|" * len(SPLIT)]
    for r in sel:
        cells = [f"{r[k] / 1e9:.3f}" if r.get(k) is not None else "" for k, _ in SPLIT]
        lines.append(f"| {r['trace']} | {r['policy']} | {r['time'] / 1e9:.3f} | "
                     f"{r['bound'] / 1e9:.3f} | {r['time'] / r['bound']:.2f} | "
                     + " | ".join(cells) + " |")
    return lines


def faster_than_oracle(rows):
    return [r for r in rows if r["policy"] not in ORACLES and r["of_oracle"] > 1]


def per_trace_figure(rows, key, ylabel, path, log=False):
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, axes = plt.subplots(1, len(traces), figsize=(4 * len(traces), 3.6), sharey=False)
    for ax, trace in zip(axes, traces):
        for p in policies:
            pts = sorted((r["capacity"], r[key]) for r in rows if r["trace"] == trace and r["policy"] == p)
            ax.plot([c for c, _ in pts], [v for _, v in pts], marker="o", label=p)
        ax.set_title(trace)
        ax.set_xlabel("GPU capacity / footprint")
        ax.invert_xaxis()
        if log:
            ax.set_yscale("log")
    axes[0].set_ylabel(ylabel)
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def traffic_figure(rows, path, capacity=0.5):
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.8))
    width = 0.8 / len(policies)
    for i, p in enumerate(policies):
        sel = {r["trace"]: r for r in rows if r["policy"] == p and r["capacity"] == capacity}
        xs = [j + i * width for j in range(len(traces))]
        left.bar(xs, [sel[t]["faults"] for t in traces], width, label=p)
        right.bar(xs, [sel[t]["bytes"] / 2**30 for t in traces], width, label=p)
    for ax, title in ((left, "faults"), (right, "GiB moved (both directions)")):
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(traces))])
        ax.set_xticklabels(traces, fontsize=8)
        ax.set_title(f"{title} at {capacity:.0%} capacity")
    right.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def above_bound_figure(rows, path, capacity=0.5):
    """Per trace at CAPACITY, each policy's time beside its bound, its fault stall and the host
    link's busy time each way, in seconds."""
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    keys = (("time", "time"), ("bound", "bound")) + SPLIT
    fig, axes = plt.subplots(1, len(traces), figsize=(4.5 * len(traces), 3.8), squeeze=False)
    width = 0.8 / len(keys)
    for ax, trace in zip(axes[0], traces):
        sel = {r["policy"]: r for r in rows if r["trace"] == trace and r["capacity"] == capacity}
        for i, (key, name) in enumerate(keys):
            ax.bar([j + i * width for j in range(len(policies))],
                   [(sel[p].get(key) or 0) / 1e9 if p in sel else 0 for p in policies], width,
                   label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(policies))])
        ax.set_xticklabels(policies, fontsize=6, rotation=45, ha="right")
        ax.set_title(f"{trace} at {capacity:.0%}")
    axes[0][0].set_ylabel("seconds")
    axes[0][-1].legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def run(argv=None, prog=None):
    """The whole comparison, from the repository root: the sweep, the table and figures in
    out/compare/, with --write-reports the table copied into experiments/compare/reports/."""
    ap = argparse.ArgumentParser(prog=prog, description="The policy comparison: the sweep "
                                 "configs/sweeps/real-traces.json, then its table and figures.")
    ap.add_argument("--write-reports", action="store_true",
                    help="also the table into experiments/compare/reports/comparison.md")
    args = ap.parse_args(argv)
    steps.in_repository("compare")
    steps.faultline("sweep", "configs/sweeps/real-traces.json")
    main(["out/sweeps/real-traces/results.json", "out/compare"])
    if args.write_reports:
        shutil.copyfile("out/compare/comparison.md", "experiments/compare/reports/comparison.md")


def main(argv=None, prog=None):
    args = steps.parser(__doc__, prog, "RESULTS_JSON", "OUT_DIR").parse_args(argv)
    results, out = args.results_json, args.out_dir
    os.makedirs(out, exist_ok=True)
    rows = load(results)
    base = json.load(open(results)).get("base", "configs/runs/default.json")
    rows = derive(rows, bounds(rows, base, "build/faultline"))
    write_tables(rows, out)
    per_trace_figure(rows, "normalised", "time / ondemand at 100%",
                     os.path.join(out, "time_normalised.png"))
    per_trace_figure(rows, "speedup", "speedup over ondemand", os.path.join(out, "speedup.png"))
    per_trace_figure(rows, "of_oracle", "oracle time / policy time",
                     os.path.join(out, "fraction_of_oracle.png"))
    traffic_figure(rows, os.path.join(out, "faults_and_bytes.png"))
    above_bound_figure(rows, os.path.join(out, "above_bound.png"))
    print(open(os.path.join(out, "comparison.md")).read())
    # The oracle is a strong policy, not a bound (policies/oracle/README.md): a run faster than
    # it is reported (here and in the table), a run faster than `faultline bound` fails above.
    faster = faster_than_oracle(rows)
    if faster:
        print(f"compare: {len(faster)} online run(s) faster than the oracle: "
              + "; ".join(f"{r['trace']} {r['policy']} at {r['capacity']:.0%}" for r in faster),
              file=sys.stderr)

