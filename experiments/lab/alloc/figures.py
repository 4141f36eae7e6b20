"""Tables and figures of the allocator study (experiments/alloc/study.py runs this last):
    experiments/alloc/study.py figures OUT_DIR DATA_DIR REPORTS_DIR
OUT_DIR holds the study's simulations (sim/, limit/, um/); DATA_DIR (experiments/alloc/data) holds
what the H200 measured (the campaigns h200-capture/, h200-live/, h200-maxbatch/). Writes into
REPORTS_DIR: fragmentation.md (every trace:
measured and simulated), live.md (live allocators beside the simulator's predictions),
maxbatch.md, um.md (the UM simulation of re-placed traces), claims.md (against GMLake's
claims), fragmentation.png, saved.png, timeline.png and live_vs_sim.png.
"""
import glob
import json
import os
import statistics

from lab import steps
from lab.tables import finish_figure, pyplot

SUMMARY = "the tables and figures from the study's simulations and the measured campaigns"

plt = pyplot()

GiB = 2**30
MODELS = ["caching", "expandable", "gmlake"]
LABEL = {"caching": "caching (PyTorch default)", "expandable": "expandable segments",
         "gmlake": "GMLake stitching"}


def load(path):
    with open(path) as f:
        return json.load(f)


def by_model(doc):
    return {r["allocator"]: r for r in doc["results"]}


def sim_rows(out, data):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "sim", "*.json"))):
        name = os.path.basename(path)[:-5]
        measured_path = os.path.join(data, "h200-capture", name + ".json")
        if not os.path.exists(measured_path):
            continue
        rows.append({"name": name, "measured": load(measured_path), "sim": by_model(load(path)),
                     "doc": load(path)})
    return rows


def fragmentation_table(rows):
    lines = ["| trace | technique | measured peak allocated | measured reserved (frag.) | "
             "caching model | expandable model | GMLake model | GMLake saves vs caching | "
             "GMLake driver calls (stitches) |", "|---" * 9 + "|"]
    for r in rows:
        m, s = r["measured"], r["sim"]
        cells = [f"{s[a]['peak_reserved'] / GiB:.2f} GiB ({100 * s[a]['fragmentation']:.1f}%)"
                 for a in MODELS]
        saved = (s["caching"]["peak_reserved"] - s["gmlake"]["peak_reserved"]) / GiB
        lines.append(f"| {r['name']} | {m['technique']} | {m['peak_allocated'] / GiB:.2f} GiB | "
                     f"{m['peak_reserved'] / GiB:.2f} GiB ({100 * m['fragmentation']:.1f}%) | "
                     + " | ".join(cells) + f" | {saved:.2f} GiB | "
                     f"{s['gmlake']['driver_calls']['total']} "
                     f"({s['gmlake']['counters'].get('stitches', 0)}) |")
    errors = [abs(r["sim"]["caching"]["peak_reserved"] - r["measured"]["peak_reserved"])
              / r["measured"]["peak_reserved"] for r in rows]
    lines.append(f"\nThe caching model against the measured peak reserved: median |error| "
                 f"{100 * statistics.median(errors):.1f}%, maximum {100 * max(errors):.1f}% "
                 f"({len(rows)} traces).")
    return "\n".join(lines) + "\n"


def plot_fragmentation(rows, path):
    fig, ax = plt.subplots(figsize=(12, 4.5))
    width = 0.2
    xs = range(len(rows))
    ax.bar([x - 1.5 * width for x in xs], [100 * r["measured"]["fragmentation"] for r in rows],
           width, label="measured (PyTorch default, H200)", color="0.4")
    for i, a in enumerate(MODELS):
        ax.bar([x + (i - 0.5) * width for x in xs],
               [100 * r["sim"][a]["fragmentation"] for r in rows], width, label=LABEL[a] + " model")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["name"] for r in rows], rotation=60, ha="right", fontsize=7)
    finish_figure(fig, path, ax, ylabel="fragmentation (%)", legend=8,
                  title="1 - peak allocated / peak reserved, per allocation trace")


def plot_saved(rows, path):
    fig, ax = plt.subplots(figsize=(12, 4))
    xs = range(len(rows))
    for i, a in enumerate(["expandable", "gmlake"]):
        ax.bar([x + (i - 0.5) * 0.4 for x in xs],
               [(r["sim"]["caching"]["peak_reserved"] - r["sim"][a]["peak_reserved"]) / GiB
                for r in rows], 0.4, label=LABEL[a])
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r["name"] for r in rows], rotation=60, ha="right", fontsize=7)
    ax.axhline(0, color="k", lw=0.5)
    finish_figure(fig, path, ax, ylabel="peak reserved saved vs caching (GiB)", legend=8)


def plot_timeline(rows, name, path):
    row = next((r for r in rows if r["name"] == name), rows[0])
    fig, ax = plt.subplots(figsize=(8, 4))
    first = row["sim"]["caching"]["timeline"]
    ax.plot([t / 1e9 for t in first["time_ns"]], [b / GiB for b in first["allocated"]],
            color="k", lw=1, label="allocated (caching)")
    for a in MODELS:
        tl = row["sim"][a]["timeline"]
        ax.plot([t / 1e9 for t in tl["time_ns"]], [b / GiB for b in tl["reserved"]],
                label=f"reserved: {LABEL[a]}")
    finish_figure(fig, path, ax, xlabel="time in the recorded run (s)", ylabel="GiB",
                  title=row["name"], legend=8)


LIVE_MODEL = {"default": "caching", "expandable": "expandable", "faultline-gmlake": "gmlake",
              "faultline-caching": "caching"}
LIVE_LABEL = {"default": "PyTorch default", "expandable": "PyTorch expandable segments",
              "faultline-gmlake": "faultline GMLake (live library)",
              "faultline-caching": "faultline caching model (live library)"}


def live_rows(out, data):
    rows = []
    for path in sorted(glob.glob(os.path.join(data, "h200-live", "*.json"))):
        if os.path.basename(path) == "manifest.json":
            continue
        live = load(path)
        workload = f"{live['model']}-{live['technique']}-b{live['batch']}"
        kind = os.path.basename(path)[len(workload) + 1:-5]
        sim = by_model(load(os.path.join(out, "sim", workload + ".json")))[LIVE_MODEL[kind]]
        rows.append({"workload": workload, "kind": kind, "live": live, "sim": sim})
    return rows


def live_table(rows):
    lines = ["| workload | allocator | live peak reserved | live frag. | step time | "
             "simulated peak reserved | simulated frag. | error of reserved |",
             "|---" * 8 + "|"]
    for r in rows:
        live, sim = r["live"], r["sim"]
        err = (sim["peak_reserved"] - live["peak_reserved"]) / live["peak_reserved"]
        lines.append(f"| {r['workload']} | {LIVE_LABEL[r['kind']]} | "
                     f"{live['peak_reserved'] / GiB:.2f} GiB | {100 * live['fragmentation']:.1f}% | "
                     f"{live['median_step_s']:.3f} s | {sim['peak_reserved'] / GiB:.2f} GiB | "
                     f"{100 * sim['fragmentation']:.1f}% | {100 * err:+.1f}% |")
    errors = [abs(r["sim"]["peak_reserved"] - r["live"]["peak_reserved"])
              / r["live"]["peak_reserved"] for r in rows]
    lines.append(f"\nMedian |error| of simulated peak reserved: {100 * statistics.median(errors):.1f}%"
                 f", maximum {100 * max(errors):.1f}% ({len(rows)} runs).\n")
    return "\n".join(lines) + "\n"


def plot_live(rows, path):
    fig, ax = plt.subplots(figsize=(5.5, 5))
    for kind in LIVE_MODEL:
        pts = [r for r in rows if r["kind"] == kind]
        ax.scatter([r["live"]["peak_reserved"] / GiB for r in pts],
                   [r["sim"]["peak_reserved"] / GiB for r in pts], label=LIVE_LABEL[kind])
    top = max(r["live"]["peak_reserved"] for r in rows) / GiB * 1.05
    ax.plot([0, top], [0, top], "k--", lw=0.8)
    finish_figure(fig, path, ax, xlabel="live peak reserved (GiB)",
                  ylabel="simulated peak reserved (GiB)", legend=7)


def maxbatch_table(out, data):
    lines = ["| allocator | live largest batch (16 GiB) | simulated largest batch | "
             "simulated: fits at batch 4..9 |", "|---|---|---|---|"]
    sims = {}
    for path in sorted(glob.glob(os.path.join(out, "limit", "gpt2-large-recompute-b*.json"))):
        batch = int(os.path.basename(path)[len("gpt2-large-recompute-b"):-5])
        sims[batch] = by_model(load(path))
    for live_name, model in [("default", "caching"), ("expandable", "expandable"),
                             ("faultline", "gmlake")]:
        live = load(os.path.join(data, "h200-maxbatch", f"gpt2-large-recompute-{live_name}.json"))
        fits = {b: sims[b][model]["completed"] for b in sorted(sims)}
        largest = max([b for b, ok in fits.items() if ok], default=None)
        lines.append(f"| {LABEL[model]} | {live['max_batch']} | {largest} | "
                     + ", ".join(f"{b}:{'yes' if ok else 'no'}" for b, ok in fits.items()) + " |")
    return "\n".join(lines) + "\n"


def um_table(out):
    lines = ["| trace | allocator | peak segments (GiB) | blocks in pieces | accesses outside "
             "blocks | simulated time | faults | host-to-GPU | evictions |", "|---" * 9 + "|"]
    for path in sorted(glob.glob(os.path.join(out, "um", "*.sim.json"))):
        name = os.path.basename(path)[:-9]
        stats = load(os.path.join(out, "um", name + ".relayout.json"))["relayout"]
        r = load(path)["results"]
        lines.append(f"| {name.rsplit('-', 1)[0]} | {name.rsplit('-', 1)[1]} | "
                     f"{stats['peak_segment_bytes_after'] / GiB:.2f} | "
                     f"{stats['block_pieces'] - stats['blocks']} | {stats['accesses_outside_blocks']} | "
                     f"{r['total_time_ns'] / 1e6:.1f} ms | {r['faults']} | "
                     f"{r['bytes_host_to_gpu'] / GiB:.2f} GiB | {r['evictions']} |")
    return "\n".join(lines) + "\n"


def claims(rows):
    saved = [(r["sim"]["caching"]["peak_reserved"] - r["sim"]["gmlake"]["peak_reserved"]) / GiB
             for r in rows]
    points = [100 * (r["sim"]["caching"]["fragmentation"] - r["sim"]["gmlake"]["fragmentation"])
              for r in rows]
    reducing = [r for r in rows if r["measured"]["technique"] != "none"]
    plain = [r for r in rows if r["measured"]["technique"] == "none"]

    def mean_frag(rs):
        return statistics.mean(100 * r["measured"]["fragmentation"] for r in rs)

    return (
        "| | GMLake paper (8 LLMs, A100-80GB) | this study (models of the H200 traces) |\n"
        "|---|---|---|\n"
        f"| memory saved vs PyTorch's caching allocator | 9.2 GB mean, up to 25 GB | "
        f"{statistics.mean(saved) * GiB / 1e9:.2f} GB mean, up to {max(saved) * GiB / 1e9:.2f} GB "
        f"({len(rows)} traces) |\n"
        f"| fragmentation removed | 15 points mean, up to 33 | {statistics.mean(points):.1f} points "
        f"mean, up to {max(points):.1f} |\n"
        f"| fragmentation with memory-reduction techniques | up to 30% | measured "
        f"{mean_frag(reducing):.1f}% mean over {len(reducing)} runs with recompute, offload or "
        f"LoRA, {mean_frag(plain):.1f}% over {len(plain)} without |\n")


def main(argv=None, prog=None):
    args = steps.parser(__doc__, prog, "OUT_DIR", "DATA_DIR", "REPORTS_DIR").parse_args(argv)
    out, data, results = args.out_dir, args.data_dir, args.reports_dir
    os.makedirs(results, exist_ok=True)
    rows = sim_rows(out, data)
    lrows = live_rows(out, data)
    docs = {"fragmentation.md": fragmentation_table(rows), "live.md": live_table(lrows),
            "maxbatch.md": maxbatch_table(out, data), "um.md": um_table(out),
            "claims.md": claims(rows)}
    for name, text in docs.items():
        with open(os.path.join(results, name), "w") as f:
            f.write(text)
    plot_fragmentation(rows, os.path.join(results, "fragmentation.png"))
    plot_saved(rows, os.path.join(results, "saved.png"))
    plot_timeline(rows, "opt-1.3b-recompute-b8", os.path.join(results, "timeline.png"))
    plot_live(lrows, os.path.join(results, "live_vs_sim.png"))
    print(docs["claims.md"] + "\n" + docs["live.md"] + "\n" + docs["maxbatch.md"])

