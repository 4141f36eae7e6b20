"""PUMP's evaluation shape from the pump-* sweeps and the committed live replays.

    experiments/papers/run.py pump-report SWEEPS_DIR OUT_DIR [--live DATA_DIR]
                                          [--claims CLAIMS.json] [--no-situations]

SWEEPS_DIR holds pump-{speedup,h100,factor,lead}/results.json (any may be missing: its tables are
left out). DATA_DIR (default experiments/live/data) holds the live campaigns; those with both
ondemand and pump runs make the live table. Writes OUT_DIR/pump.md (the tables), speedup.png,
factor.png, lead.png, ratio.png, summary.json, and CLAIMS.json when asked. --no-situations skips
reading the traces for their situation (allocator blocks, cuDNN kernels).

The whole evaluation (`experiments/papers/run.py pump`, run()): speedup over UM (ondemand) per
model on the H200 and H100 profiles, the memory-factor sweep, PUMP's four default situations, the
CPU-lead sweep that decides whether the factor matters, and the live replays of pump against
ondemand committed in experiments/live/data/ beside them: the sweeps configs/sweeps/pump-*.json
(5 steps each), then this report.
"""
import json
import math
import os
import re
import subprocess
import sys

from lab import steps
from lab.campaigns import load_manifest, load_runs, median_of_repeats, trace_name
from lab.paths import EXPERIMENTS, FAULTLINE, REPO
from lab.tables import finish_figure, markdown_table, pyplot, save_figure, write_json, write_lines

SUMMARY = "PUMP's tables, figures, summary and claims from its sweeps"

# The paper's one published number (PUMP, ASP-DAC 2022, DOI 10.1109/ASP-DAC52403.2022.9712507,
# abstract: "about 2x speedup on average compared to the baseline that naively enables UM"). Its
# models, GPU and oversubscription are not published (the abstract alone is public).
PAPER = {"paper": "PUMP (ASP-DAC 2022)", "speedup": 2.0,
         "source": "abstract, DOI 10.1109/ASP-DAC52403.2022.9712507"}

# ULMS_GPU_MEMORY_FACTOR's defaults, first that applies wins (ailabstw/PUMP @ 76425c49, global.h,
# global.cpp updateGpuMemoryFactor).
SITUATIONS = [("ACTIVE", 100, "the framework reports active tensors (a patched framework)"),
              ("MALLOC", 80, "the framework reports its allocations (a patched framework)"),
              ("CUDNN", 100, "cuDNN calls seen"),
              ("NO_INFO", 60, "none of these")]

TRACE_ORDER = ["resnet50", "gpt2-small", "gpt2-medium", "bert-large", "t5-base", "moe",
               "graphsage"]
COMMAND = "experiments/papers/run.py pump"

plt = pyplot()


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def load(sweeps, name):
    """The points of sweep NAME: trace, policy, factor (0 = PUMP's own), lead, capacity, gpu, time."""
    path = os.path.join(sweeps, f"pump-{name}", "results.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        doc = json.load(f)
    rows = []
    for p in doc["points"]:
        pt, cfg = p["point"], p["config"]
        params = cfg["policy"].get("params") or {}
        gpu = cfg["gpu"]["name"] if isinstance(cfg["gpu"], dict) else cfg["gpu"]
        rows.append({"trace": trace_name(pt["trace"]), "policy": cfg["policy"]["name"],
                     "factor": params.get("memory_factor_percent", 0),
                     "lead": params.get("lead_launches", 0), "capacity": pt["capacity_fraction"],
                     "gpu": gpu, "iterations": cfg.get("iterations"),
                     "time_s": p["results"]["total_time_ns"] / 1e9,
                     "faults": p["results"]["faults"],
                     "h2d_gb": p["results"]["bytes_host_to_gpu"] / 1e9,
                     "revision": p["git_revision"], "sweep": name})
    return rows


def order(traces):
    return sorted(traces, key=lambda t: (TRACE_ORDER.index(t) if t in TRACE_ORDER else 99, t))


class Grid:
    """Times by (trace, policy, factor, lead, capacity, gpu)."""

    def __init__(self, rows):
        self.t = {}
        for r in rows:
            self.t[(r["trace"], r["policy"], r["factor"], r["lead"], r["capacity"], r["gpu"])] = r

    def time(self, trace, policy, factor, lead, capacity, gpu):
        r = self.t.get((trace, policy, factor, lead, capacity, gpu))
        return r["time_s"] if r else None

    def speedup(self, trace, factor, lead, capacity, gpu):
        um = self.time(trace, "ondemand", 0, 0, capacity, gpu)
        pump = self.time(trace, "pump", factor, lead, capacity, gpu)
        return um / pump if um and pump else None

    def values(self, key):
        return sorted({k[key] for k in self.t})


def fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def situation_of(trace_path, faultline):
    """What PUMP would know of a trace: allocator blocks (the framework's allocation records,
    MALLOC in our traces) and cuDNN kernels (names with "cudnn", PyTorch's own at:: kernels
    aside)."""
    dump = subprocess.run([faultline, "trace", "dump", trace_path], capture_output=True,
                          text=True, check=True).stdout
    blocks = len(re.findall(r'"kind":"block"', dump))
    names = set(re.findall(r'"name":"([^"]*)"', dump))
    cudnn = sorted(n for n in names if "cudnn" in n.lower() and not n.startswith("at::"))
    ours = "MALLOC" if blocks else "NO_INFO"  # policies/pump: 80 with allocator blocks, else 60
    unpatched = "CUDNN" if cudnn else "NO_INFO"  # PUMP on a stock framework sees no MALLOC
    return {"allocator_blocks": blocks, "cudnn_kernel_names": len(cudnn), "ours": ours,
            "stock_framework": unpatched}


def live_table(data_dir):
    """Per campaign with ondemand and pump: trace, budget, medians, speedup."""
    rows = []
    for campaign in sorted(os.listdir(data_dir)):
        folder = os.path.join(data_dir, campaign)
        if not os.path.isdir(folder) or not os.path.exists(os.path.join(folder, "manifest.json")):
            continue
        runs = [r for r in load_runs(folder) if r["policy"] in ("ondemand", "pump")
                and not r["params"]]
        med = {(r["trace"], r["policy"], r["budget"]): r for r in median_of_repeats(runs)}
        manifest = load_manifest(folder)
        machine = manifest.get("machine", [{}])
        if isinstance(machine, list):  # a campaign without machine.txt has an empty list
            machine = machine[0].get("text", ["?"])[0] if machine else "?"
        else:
            machine = str(machine)
        for (trace, policy, budget), um in sorted(med.items()):
            if policy != "ondemand" or (trace, "pump", budget) not in med:
                continue
            pump = med[(trace, "pump", budget)]
            rows.append({"campaign": campaign, "machine": machine.split(",")[0],
                         "gpu_uuid": machine.split(",")[1].strip() if "," in machine else "",
                         "revision": manifest.get("revision"),
                         "traces_revision": manifest.get("traces_revision"),
                         "trace": trace, "budget": budget,
                         "iterations": pump["doc"]["config"].get("iterations", "trace's own"),
                         "repeats": len(pump["repeats_s"]),
                         "ondemand_s": um["results"]["total_time_ns"] / 1e9,
                         "pump_s": pump["results"]["total_time_ns"] / 1e9})
    for r in rows:
        r["speedup"] = r["ondemand_s"] / r["pump_s"]
    return rows


def pct(c):
    return f"{round(c * 100)}%"


def run(out, claims_path, write_reports=False, sweep_args=()):
    """The whole evaluation, from the repository root: the sweeps (SWEEP_ARGS passed on:
    --jobs N), then the report into OUT and CLAIMS_PATH."""
    for s in ("speedup", "h100", "factor", "lead"):
        steps.faultline("sweep", f"configs/sweeps/pump-{s}.json", *sweep_args)
    return main(["out/sweeps", out, "--claims", claims_path])


def main(argv=None, prog=None):
    ap = steps.parser(__doc__, prog, "SWEEPS", "OUT")
    ap.add_argument("--live", default=os.path.join(EXPERIMENTS, "live", "data"))
    ap.add_argument("--claims")
    ap.add_argument("--no-situations", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    rows = load(args.sweeps, "speedup") + load(args.sweeps, "h100") + \
        load(args.sweeps, "factor") + load(args.sweeps, "lead")
    if not rows:
        sys.exit(f"pump-report: no pump-* results in {args.sweeps}")
    g = Grid(rows)
    traces = order({r["trace"] for r in rows})
    iterations = sorted({r["iterations"] for r in rows if r["iterations"]})
    revisions = sorted({r["revision"] for r in rows})
    md = ["# PUMP's evaluation shape in the simulator", "",
          f"Generated by `{COMMAND}` from `out/sweeps/pump-*` (steps per run: "
          f"{', '.join(map(str, iterations))}; revision {', '.join(revisions)}).", ""]
    summary = {"paper": PAPER, "revisions": revisions, "iterations": iterations}

    # (1) speedup over UM per model, PUMP's own factor, no lead.
    caps = sorted({r["capacity"] for r in rows if r["sweep"] in ("speedup", "h100")},
                  reverse=True)
    cols = [(gpu, c) for gpu in ("h200", "h100") for c in caps
            if any(g.time(t, "ondemand", 0, 0, c, gpu) for t in traces)]
    table = []
    by_col = {col: [] for col in cols}
    for t in traces:
        cells = []
        for gpu, c in cols:
            s = g.speedup(t, 0, 0, c, gpu)
            if s:
                by_col[(gpu, c)].append(s)
            cells.append(fmt(s))
        table.append([t] + cells)
    table.append(["**geomean**"] + [f"**{fmt(geomean(by_col[col]))}**" for col in cols])
    table.append(["paper (model, GPU, ratio unknown)"] + [f"about {PAPER['speedup']:.0f}"] * len(cols))
    md += ["## Speedup of PUMP over UM (ondemand), PUMP's own factor", "",
           "Capacity as a fraction of the footprint (50% = 2x oversubscription).", ""]
    md += markdown_table(["trace"] + [f"{gpu.upper()} {pct(c)}" for gpu, c in cols], table)
    summary["speedup"] = {f"{gpu}-{pct(c)}": {"geomean": geomean(by_col[(gpu, c)]),
                                              "min": min(by_col[(gpu, c)], default=None),
                                              "max": max(by_col[(gpu, c)], default=None),
                                              "traces": len(by_col[(gpu, c)])}
                          for gpu, c in cols}

    # (2) the memory-factor sweep.
    fcaps = sorted({r["capacity"] for r in rows if r["sweep"] == "factor"}, reverse=True)
    factors = [f for f in g.values(2) if f > 0]
    summary["factor"] = {}
    if fcaps:
        md += ["", "## Memory-factor sweep (H200, the program's own CPU lead)", "",
               "Speedup over ondemand; `own` is PUMP's choice (`memory_factor_percent` 0: 80 "
               "with allocator blocks, 60 without). The spread is max/min time over the factors.",
               ""]
        table = []
        for c in fcaps:
            for t in traces:
                s = [g.speedup(t, f, 0, c, "h200") for f in [0] + factors]
                times = [g.time(t, "pump", f, 0, c, "h200") for f in [0] + factors]
                times = [x for x in times if x]
                spread = max(times) / min(times) - 1 if times else None
                summary["factor"][f"{t}-{pct(c)}"] = {"spread": spread}
                table.append([pct(c), t] + [fmt(x) for x in s] + [f"{spread * 100:.2f}%" if
                                                                   spread is not None else "–"])
        md += markdown_table(["capacity", "trace", "own"] + [f"{f:g}%" for f in factors]
                                    + ["spread"], table)

    # (3) the one factor that decides whether the memory factor matters: the CPU's lead.
    leads = [x for x in g.values(3)]
    lcap = min(fcaps) if fcaps else None
    summary["lead"] = {}
    if len(leads) > 1 and lcap:
        lfactors = sorted({r["factor"] for r in rows if r["sweep"] == "lead"})
        md += ["", f"## The CPU's lead: launches PUMP hears before their kernels start "
               f"(H200, {pct(lcap)})", "",
               "Speedup over ondemand by factor; lead 0 is the trace's own timeline (each "
               "launch heard as the program's CPU issued it); L > 0 adds launches heard L "
               "kernels ahead of the one starting. Best factor in bold.", ""]
        table = []
        for t in traces:
            for lead in leads:
                s = {f: g.speedup(t, f, lead, lcap, "h200") for f in lfactors}
                best = max((v, f) for f, v in s.items() if v) if any(s.values()) else (None, None)
                summary["lead"][f"{t}-{lead}"] = {"best_factor": best[1], "best": best[0],
                                                  "by_factor": {str(f): v for f, v in s.items()}}
                table.append([t, str(lead)] + [f"**{fmt(v)}**" if f == best[1] else fmt(v)
                                               for f, v in s.items()])
        md += markdown_table(["trace", "lead"] + [f"{f:g}%" for f in lfactors], table)
        lead_figure(g, traces, leads, lfactors, lcap, os.path.join(args.out, "lead.png"))

    # (4) the four situations.
    if not args.no_situations:
        md += ["", "## PUMP's four default situations", "",
               "Which default factor (`ULMS_GPU_MEMORY_FACTOR`, global.h: " +
               ", ".join(f"{n} {f}" for n, f, _ in SITUATIONS) +
               ") each trace puts PUMP in, and the speedup over ondemand under each default "
               f"at {pct(lcap) if lcap else '?'} on the H200 (lead 0 / the largest lead swept). "
               "`ours` is what policies/pump picks from the trace (allocator blocks = the "
               "framework's allocation records: MALLOC); `stock` what PUMP itself would pick on "
               "an unpatched PyTorch, which reports nothing to it (cuDNN calls: CUDNN).", ""]
        lmax = max(leads) if leads else 0
        table = []
        summary["situations"] = {}
        for t in traces:
            s = situation_of(os.path.join(REPO, "traces", "real", f"{t}.fltrace"),
                             FAULTLINE)
            cells = []
            for _, f, _ in SITUATIONS:
                a = g.speedup(t, f, 0, lcap, "h200")
                b = g.speedup(t, f, lmax, lcap, "h200")
                cells.append(f"{fmt(a)} / {fmt(b)}")
                s[f"speedup_{f}"] = [a, b]
            summary["situations"][t] = s
            table.append([t, str(s["allocator_blocks"]), str(s["cudnn_kernel_names"]),
                          s["ours"], s["stock_framework"]] + cells)
        md += markdown_table(["trace", "allocator blocks", "cuDNN kernels", "ours",
                                     "stock"] + [f"{n} ({f}%)" for n, f, _ in SITUATIONS], table)

    # (5) live, from the committed campaigns.
    live = live_table(args.live) if os.path.isdir(args.live) else []
    live = [r for r in live if r["trace"] in TRACE_ORDER]
    if live:
        campaigns = sorted({r["campaign"] for r in live}, key=lambda c: (
            next(r["machine"] for r in live if r["campaign"] == c), c))
        md += ["", "## Live: PUMP against ondemand on the GPU (committed campaigns)", "",
               "`faultline replay` (capacity mode budget: the replay launches each kernel once "
               "the one before it ends, so no CPU lead; PUMP's own factor), the median of each "
               "campaign's repeats; read from experiments/live/data/, not re-measured.", ""]
        md += markdown_table(
            ["campaign", "machine", "GPU", "revision", "traces of revision", "repeats"],
            [[c, r["machine"], r["gpu_uuid"], r["revision"], r["traces_revision"] or r["revision"],
              str(r["repeats"])] for c in campaigns
             for r in [next(x for x in live if x["campaign"] == c)]])
        md += ["", "Speedup of pump over ondemand (ondemand s / pump s):", ""]
        table = []
        for t in order({r["trace"] for r in live}):
            for b in sorted({r["budget"] for r in live}, reverse=True):
                cells = []
                for c in campaigns:
                    r = next((x for x in live if (x["campaign"], x["trace"], x["budget"]) ==
                              (c, t, b)), None)
                    cells.append(f"{r['speedup']:.2f} ({r['ondemand_s']:.2f} / {r['pump_s']:.2f})"
                                 if r else "")
                if any(cells):
                    table.append([t, pct(b)] + cells)
        md += markdown_table(["trace", "budget"] + campaigns, table)
        summary["live"] = {}
        for machine in sorted({r["machine"] for r in live}):
            for b in sorted({r["budget"] for r in live}):
                s = [r["speedup"] for r in live if r["machine"] == machine and r["budget"] == b]
                if s:
                    summary["live"][f"{machine} {pct(b)}"] = {
                        "geomean": geomean(s), "min": min(s), "max": max(s), "runs": len(s),
                        "campaigns": sorted({r["campaign"] for r in live
                                             if r["machine"] == machine and r["budget"] == b})}
        md += ["", "Geomean per machine and budget over every (campaign, trace): " + "; ".join(
            f"{k} {v['geomean']:.2f} ({v['runs']} runs, {v['min']:.2f}-{v['max']:.2f})"
            for k, v in summary["live"].items()) + "."]
    summary["live_rows"] = live

    speedup_figure(g, traces, cols, live, os.path.join(args.out, "speedup.png"))
    if fcaps:
        factor_figure(g, traces, factors, fcaps, leads, os.path.join(args.out, "factor.png"))
    ratio_figure(g, traces, caps, os.path.join(args.out, "ratio.png"))
    write_lines(os.path.join(args.out, "pump.md"), md)
    write_json(os.path.join(args.out, "summary.json"), summary)
    if args.claims:
        write_json(args.claims, claims(summary, cols))


def claims(summary, cols):
    rows = []
    for gpu, c in cols:
        s = summary["speedup"].get(f"{gpu}-{pct(c)}")
        if not s or c == 1.0:
            continue
        rows.append({"paper": PAPER["paper"],
                     "claim": "speedup over naive UM, average over models",
                     "paper_value": f"about {PAPER['speedup']:.0f}x ({PAPER['source']}; models, "
                                    "GPU and oversubscription not published)",
                     "our_value": f"{s['geomean']:.2f}x geomean ({s['min']:.2f}-{s['max']:.2f}x)",
                     "setting": f"simulator, {gpu.upper()} profile, capacity {pct(c)} of the "
                                f"footprint, {s['traces']} ML traces (traces/real), "
                                f"{', '.join(map(str, summary['iterations']))} steps, PUMP's own "
                                "factor, UM = ondemand",
                     "command": COMMAND})
    for key, s in summary.get("live", {}).items():
        rows.append({"paper": PAPER["paper"],
                     "claim": "speedup over naive UM, average over models",
                     "paper_value": f"about {PAPER['speedup']:.0f}x ({PAPER['source']})",
                     "our_value": f"{s['geomean']:.2f}x geomean ({s['min']:.2f}-{s['max']:.2f}x)",
                     "setting": f"live faultline replay on {key} budget, {s['runs']} "
                                f"(campaign, trace) runs of campaigns {', '.join(s['campaigns'])} "
                                "(experiments/live/data), the traces' own steps",
                     "command": COMMAND})
    return rows


def speedup_figure(g, traces, cols, live, path):
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.8 / max(1, len(cols))
    for i, (gpu, c) in enumerate(cols):
        ys = [g.speedup(t, 0, 0, c, gpu) or 0 for t in traces]
        ax.bar([j + (i - (len(cols) - 1) / 2) * width for j in range(len(traces))], ys, width,
               label=f"sim {gpu.upper()} {pct(c)}")
    for r in live:
        if r["trace"] in traces and r["budget"] == 0.5:
            ax.plot(traces.index(r["trace"]), r["speedup"], "k^" if "H200" in r["machine"]
                    else "kv", ms=5)
    ax.plot([], [], "k^", label="live H200 50%")
    ax.plot([], [], "kv", label="live H100 50%")
    ax.axhline(PAPER["speedup"], color="r", ls="--", lw=1, label="paper: about 2x")
    ax.set_xticks(range(len(traces)))
    ax.set_xticklabels(traces, fontsize=8)
    ax.set_ylabel("speedup over UM (ondemand)")
    ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def factor_figure(g, traces, factors, fcaps, leads, path):
    lmax = max(leads) if leads else 0
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=True)
    for ax, (lead, cap) in zip(axes, [(0, min(fcaps)), (lmax, min(fcaps))]):
        for t in traces:
            xy = [(f, g.speedup(t, f, lead, cap, "h200")) for f in factors]
            xy = [(f, y) for f, y in xy if y]  # the lead sweep has fewer factors
            ax.plot([f for f, _ in xy], [y for _, y in xy], "o-", label=t, ms=3)
        for x, name in ((60, "NO_INFO"), (80, "MALLOC"), (100, "CUDNN/ACTIVE")):
            ax.axvline(x, color="grey", lw=0.6, ls=":")
            ax.text(x, ax.get_ylim()[1] if ax.lines else 1, name, fontsize=6, rotation=90,
                    va="top")
        ax.set_title(f"H200, {pct(cap)}, lead {lead} launches", fontsize=9)
        ax.set_xlabel("ULMS_GPU_MEMORY_FACTOR (%)")
    axes[0].set_ylabel("speedup over ondemand")
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def lead_figure(g, traces, leads, lfactors, cap, path):
    fig, ax = plt.subplots(figsize=(6, 3.6))
    xs = [max(x, 0.5) for x in leads]
    for f in lfactors:
        ys = [geomean([s for s in (g.speedup(t, f, lead, cap, "h200") for t in traces) if s])
              for lead in leads]
        ax.plot(xs, ys, "o-", label=f"factor {f:g}%")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs)
    ax.set_xticklabels([str(x) for x in leads])
    ax.set_title(f"H200, {pct(cap)}, {len(traces)} traces", fontsize=9)
    finish_figure(fig, path, ax, xlabel="CPU lead (launches heard before their kernel starts)",
                  ylabel="geomean speedup over ondemand", legend=7, close=True)


def ratio_figure(g, traces, caps, path):
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for t in traces:
        ys = [g.speedup(t, 0, 0, c, "h200") for c in caps]
        ax.plot([1 / c for c in caps], [y if y else float("nan") for y in ys], "o-", label=t, ms=3)
    ax.axhline(PAPER["speedup"], color="r", ls="--", lw=1)
    finish_figure(fig, path, ax, xlabel="oversubscription (footprint / capacity)",
                  ylabel="speedup over ondemand", legend=6, close=True)

