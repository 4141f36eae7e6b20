"""The schedule policy against the seeds, from the sweep configs/sweeps/schedule.json and the
live 10-step replays (experiments/live/data/*/iter10/).

    experiments/papers/run.py schedule-report RESULTS_JSON OUT_DIR --claims CLAIMS_JSON
        [--dnn TRACE...] [--live ROOT]

Writes OUT_DIR/schedule.md (every table), speedup.png, of_oracle.png and summary.json, and the
headline rows into CLAIMS_JSON. The targets (issue 24): at 50% of the footprint, on the DNN traces,
at least 2x faster than ondemand and within 1.3x of the oracle in the simulator; on no trace and
capacity more than 5% slower than ondemand; live, faster than pump and deepum on three traces.

The whole evaluation (`experiments/papers/run.py schedule`, run()): every shipped real trace at
100/75/50/33% of its footprint, 10 training steps, under ondemand, deepum, pump, schedule, the
oracle and the oracle with the freed-block discard (the sweep), then this report. The live rows
come from the campaign folders under experiments/live/data/ that hold `iter10/` (10 steps
replayed at 50%).
"""
import glob
import json
import os
import statistics

from lab import steps
from lab.campaigns import trace_name
from lab.tables import finish_figure, markdown_table, pyplot, write_json, write_lines

SUMMARY = ("the schedule policy's tables, figures and claims from its sweep and the live 10-step "
           "runs")

plt = pyplot()

DNN = ["resnet50", "gpt2-small", "gpt2-medium", "bert-large", "t5-base", "moe", "graphsage"]
SEEDS = ["ondemand", "deepum", "pump"]
ORACLES = ["oracle", "oracle+discard"]
POLICIES = SEEDS + ["schedule"] + ORACLES
LIVE_ROOT = "experiments/live/data"


def label(policy):
    if policy["name"] == "oracle" and policy["params"].get("discard_freed"):
        return "oracle+discard"
    if policy["params"]:
        raise SystemExit(f"report: unexpected params for {policy['name']}: {policy['params']}")
    return policy["name"]


def load(path):
    doc = json.load(open(path))
    times = {}
    for p in doc["points"]:
        key = (trace_name(p["point"]["trace"]), p["point"]["capacity_fraction"],
               label(p["point"]["policy"]))
        times[key] = p["results"]["total_time_ns"] / 1e9
    revisions = sorted({p["git_revision"] for p in doc["points"]})
    return times, revisions


def derive(times):
    traces = list(dict.fromkeys(t for t, _, _ in times))
    capacities = sorted({c for _, c, _ in times}, reverse=True)
    rows = []
    for t in traces:
        for c in capacities:
            row = {"trace": t, "capacity": c, **{p: times[(t, c, p)] for p in POLICIES}}
            best_oracle = min(row[o] for o in ORACLES)
            row["speedup"] = row["ondemand"] / row["schedule"]
            row["vs_oracle"] = row["schedule"] / row["oracle"]
            row["vs_best_oracle"] = row["schedule"] / best_oracle
            row["of_bound_gain"] = ((row["ondemand"] - row["schedule"])
                                    / max(1e-12, row["ondemand"] - best_oracle))
            row["vs_ondemand"] = row["schedule"] / row["ondemand"]
            rows.append(row)
    return rows


def live_rows(root):
    """(campaign, trace, policy) -> seconds, from every campaign's iter10/ folder."""
    rows = []
    for folder in sorted(glob.glob(os.path.join(root, "*", "iter10"))):
        campaign = os.path.basename(os.path.dirname(folder))
        runs = {}
        for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
            doc = json.load(open(path))
            if "results" not in doc:
                continue
            name = os.path.basename(path)[:-len(".json")]
            trace, policy, _budget = name.rsplit("-", 2)
            runs.setdefault(trace, {})[policy] = doc["results"]["total_time_ns"] / 1e9
        for trace, by in runs.items():
            rows.append({"campaign": campaign, "trace": trace, **by})
    return rows


def tables(rows, live, dnn):
    lines = ["# schedule against the seeds", "",
             "Simulated time (s) of 10 training steps, H200 profile, capacity as a fraction of the "
             "trace's footprint; `speedup` = ondemand / schedule, `/oracle` = schedule / oracle, "
             "`/best` = schedule / the faster of the oracle and the oracle with discard.", "",
             *markdown_table(
                 ["trace", "capacity"] + POLICIES + ["speedup", "/oracle", "/best"],
                 [[r["trace"], f"{r['capacity']:.0%}"] + [f"{r[p]:.2f}" for p in POLICIES]
                  + [f"{r['speedup']:.2f}", f"{r['vs_oracle']:.2f}", f"{r['vs_best_oracle']:.2f}"]
                  for r in rows])]
    half = [r for r in rows if r["capacity"] == 0.5]
    lines += ["", "## Targets at 50%, DNN traces", "",
              *markdown_table(
                  ["trace", "speedup over ondemand (target >= 2)", "/oracle (target <= 1.3)",
                   "/best oracle", "met"],
                  [[r["trace"], f"{r['speedup']:.2f}", f"{r['vs_oracle']:.2f}",
                    f"{r['vs_best_oracle']:.2f}",
                    "yes" if r["speedup"] >= 2 and r["vs_best_oracle"] <= 1.3 else "no"]
                   for r in half if r["trace"] in dnn])]
    worst = max(rows, key=lambda r: r["vs_ondemand"])
    lines += ["", f"Slowest against ondemand: {worst['trace']} at {worst['capacity']:.0%}, "
              f"{worst['vs_ondemand']:.3f}x ondemand's time (target <= 1.05); "
              f"{sum(r['vs_ondemand'] > 1.05 for r in rows)} of {len(rows)} runs beyond 1.05."]
    if live:
        cols = ["ondemand", "deepum", "pump", "schedule"]
        lines += ["", "## Live, 10 steps at 50% (`faultline replay --iterations 10`)", "",
                  *markdown_table(
                      ["campaign", "trace"] + cols + ["faster than pump and deepum"],
                      [[r["campaign"], r["trace"]] + [f"{r[c]:.2f}" if c in r else "-" for c in cols]
                       + [live_wins(r)] for r in live])]
    return "\n".join(lines) + "\n"


def live_wins(r):
    if not all(k in r for k in ("schedule", "pump", "deepum")):
        return "-"
    return "yes" if r["schedule"] < min(r["pump"], r["deepum"]) else "no"


def figure(rows, key, ylabel, path, policies):
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    half = {r["trace"]: r for r in rows if r["capacity"] == 0.5}
    fig, ax = plt.subplots(figsize=(12, 3.8))
    width = 0.8 / len(policies)
    for i, p in enumerate(policies):
        ax.bar([j + i * width for j in range(len(traces))], [key(half[t], p) for t in traces],
               width, label=p)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(traces))])
    ax.set_xticklabels(traces, fontsize=8)
    finish_figure(fig, path, ax, ylabel=ylabel, legend=7, close=True,
                  title="50% of the footprint, 10 steps, simulated (H200 profile)")


def summary(rows, live, revisions, dnn):
    half = [r for r in rows if r["capacity"] == 0.5 and r["trace"] in dnn]
    met = [r["trace"] for r in half if r["speedup"] >= 2 and r["vs_best_oracle"] <= 1.3]
    return {
        "sim_revisions": revisions,
        "dnn_at_50": {r["trace"]: {"speedup_over_ondemand": r["speedup"],
                                   "vs_oracle": r["vs_oracle"],
                                   "vs_best_oracle": r["vs_best_oracle"]} for r in half},
        "dnn_targets_met": met,
        "geomean_speedup_dnn_50": statistics.geometric_mean([r["speedup"] for r in half]),
        "max_vs_ondemand": max(r["vs_ondemand"] for r in rows),
        "runs_beyond_5_percent_slower": sum(r["vs_ondemand"] > 1.05 for r in rows),
        "live_traces_faster_than_pump_and_deepum": sorted(
            {r["trace"] for r in live if live_wins(r) == "yes"}),
    }


def claims(s, dnn):
    setting = ("simulator, H200 profile, 10 steps, capacity 50% of the footprint, DNN traces "
               "(" + ", ".join(dnn) + ")")
    command = "experiments/papers/run.py schedule --write-reports"
    return [
        {"paper": "faultline schedule (this project's policy, issue 24)",
         "claim": "speedup over ondemand, geomean over DNN traces at 50%",
         "paper_value": ">= 2x (target)", "our_value": f"{s['geomean_speedup_dnn_50']:.2f}x",
         "setting": setting, "command": command},
        {"paper": "faultline schedule (this project's policy, issue 24)",
         "claim": "DNN traces at 50% within 1.3x of the oracle and >= 2x over ondemand",
         "paper_value": f"{len(s['dnn_at_50'])} of {len(s['dnn_at_50'])} (target)",
         "our_value": f"{len(s['dnn_targets_met'])} of {len(s['dnn_at_50'])}",
         "setting": setting, "command": command},
        {"paper": "faultline schedule (this project's policy, issue 24)",
         "claim": "live traces where schedule beats pump and deepum (10 steps, 50%)",
         "paper_value": ">= 3 (target)",
         "our_value": str(len(s["live_traces_faster_than_pump_and_deepum"])),
         "setting": "faultline replay on the lent GPU, 10 steps, budget 50%", "command": command},
    ]


def run(out, claims_path, write_reports=False, sweep_args=()):
    """The whole evaluation, from the repository root: the sweep (SWEEP_ARGS passed on: --jobs N),
    then the report into OUT and CLAIMS_PATH."""
    steps.faultline("sweep", "configs/sweeps/schedule.json", *sweep_args)
    return main(["out/sweeps/schedule/results.json", out, "--claims", claims_path])


def main(argv=None, prog=None):
    ap = steps.parser(__doc__, prog, "RESULTS", "OUT")
    ap.add_argument("--claims", required=True)
    ap.add_argument("--dnn", nargs="+", default=DNN, help="the traces the targets are for")
    ap.add_argument("--live", default=LIVE_ROOT, help="where the campaigns' iter10/ folders are")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    times, revisions = load(args.results)
    rows = derive(times)
    live = live_rows(args.live)
    write_lines(os.path.join(args.out, "schedule.md"),
                       [tables(rows, live, args.dnn).rstrip("\n")])
    figure(rows, lambda r, p: r["ondemand"] / r[p], "speedup over ondemand",
           os.path.join(args.out, "speedup.png"), SEEDS[1:] + ["schedule"] + ORACLES)
    figure(rows, lambda r, p: min(r[o] for o in ORACLES) / r[p],
           "best oracle time / policy time", os.path.join(args.out, "of_oracle.png"),
           SEEDS + ["schedule"])
    s = summary(rows, live, revisions, args.dnn)
    write_json(os.path.join(args.out, "summary.json"), s, sort_keys=True)
    write_json(args.claims, claims(s, args.dnn))
    print(open(os.path.join(args.out, "schedule.md")).read())
