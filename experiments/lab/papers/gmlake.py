"""GMLake's headline numbers beside ours (the last step of `experiments/papers/run.py gmlake`):

    experiments/papers/run.py gmlake-report SIM_DIR [--write-reports]

SIM_DIR (out/papers/gmlake) holds the run's simulations: sim/NAME.json (each captured history
through the caching, expandable and GMLake models) and fraglimit/NAME-LIMIT.json (GMLake's
fragLimit swept). The measured side is read from the campaigns in CAMPAIGNS. Writes table.md,
table.csv, batch.md, fraglimit.md, results.json, claims.json and gmlake.png into
out/papers/gmlake/ (with --write-reports: experiments/papers/gmlake/reports/, and claims.json
into experiments/papers/gmlake/).

The whole evaluation (`experiments/papers/run.py gmlake`, run()), at the paper's scale from the
allocation histories captured on one H200 (experiments/alloc/data/h200-large,
h200-large-batches): 1. every history through faultline's caching, expandable and GMLake models
(configs/alloc/default.json): saved GB and fragmentation points per run; 2. the sweep that
explains the gap to the paper's numbers: the batch series is in the data; GMLake's fragLimit
swept over the 7B LRO histories (32 MiB to 1 GiB); then this report. About a minute on 2 cores.
"""
import glob
import json
import os
import statistics
import subprocess

from lab import steps
from lab.paths import EXPERIMENTS, REPO
from lab.tables import markdown_table, pyplot, reports_dir, save_figure, write_csv, write_json, write_lines

SUMMARY = "GMLake's table, sweeps, figure and claims from its simulations"

PAPER_DIR = os.path.join(EXPERIMENTS, "papers", "gmlake")

GiB = 2**30
GB = 1e9
CAMPAIGNS = ["experiments/alloc/data/h200-large", "experiments/alloc/data/h200-large-batches"]
COMMAND = "experiments/papers/run.py gmlake"
STRATEGY = {"none": "N", "recompute": "R", "lora": "L", "lora-recompute": "LR",
            "recompute-zero": "RO", "lora-recompute-zero": "LRO"}  # the paper's letters
SOURCE = ("GMLake (Guo et al., ASPLOS '24), abstract: 'an average of 9.2 GB (up to 25 GB) GPU "
          "memory usage and 15% (up to 33%) fragmentation among eight LLM models on GPU A100 "
          "with 80 GB memory'")
# The paper's numbers (source above). Fragmentation = 1 - peak allocated / peak reserved
# (glake's README, 'utilization ratio'); its reduction in percentage points.
PAPER = {"saved_gb_mean": 9.2, "saved_gb_max": 25.0, "points_mean": 15.0, "points_max": 33.0}
CLAIMS = [("saved_gb_mean", "GPU memory saved vs PyTorch's caching allocator, mean (GB)"),
          ("saved_gb_max", "GPU memory saved vs PyTorch's caching allocator, max (GB)"),
          ("points_mean", "fragmentation removed, mean (percentage points)"),
          ("points_max", "fragmentation removed, max (percentage points)")]


def load(path):
    with open(path) as f:
        return json.load(f)


def revision():
    done = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def rows_of(sim_dir):
    """One row per captured run: the measured result beside the three models' replay."""
    rows = []
    for campaign in CAMPAIGNS:
        for path in sorted(glob.glob(os.path.join(REPO, campaign, "*.json"))):
            name = os.path.basename(path)[:-5]
            if name == "manifest":
                continue
            measured = load(path)
            doc = load(os.path.join(sim_dir, "sim", name + ".json"))
            sim = {r["allocator"]: r for r in doc["results"]}
            caching, gmlake = sim["caching"], sim["gmlake"]
            rows.append({
                "run": name, "campaign": os.path.basename(campaign), "model": measured["model"],
                "technique": measured["technique"], "strategy": STRATEGY[measured["technique"]],
                "batch": measured["batch"], "seq": measured["seq"],
                "params_b": measured["params"] / 1e9, "step_s": measured["median_step_s"],
                "measured_allocated_gib": measured["peak_allocated"] / GiB,
                "measured_reserved_gib": measured["peak_reserved"] / GiB,
                "measured_frag_pct": 100 * measured["fragmentation"],
                "caching_reserved_gib": caching["peak_reserved"] / GiB,
                "caching_frag_pct": 100 * caching["fragmentation"],
                "expandable_reserved_gib": sim["expandable"]["peak_reserved"] / GiB,
                "expandable_frag_pct": 100 * sim["expandable"]["fragmentation"],
                "gmlake_reserved_gib": gmlake["peak_reserved"] / GiB,
                "gmlake_frag_pct": 100 * gmlake["fragmentation"],
                "saved_gb": (caching["peak_reserved"] - gmlake["peak_reserved"]) / GB,
                "points": 100 * (caching["fragmentation"] - gmlake["fragmentation"]),
                "stitches": gmlake["counters"].get("stitches", 0),
                "sim_config": doc["config"], "sim_revision": doc["faultline"]["git_revision"]})
    return rows


def summary(rows):
    saved = [r["saved_gb"] for r in rows]
    points = [r["points"] for r in rows]
    return {"saved_gb_mean": statistics.mean(saved), "saved_gb_max": max(saved),
            "points_mean": statistics.mean(points), "points_max": max(points), "runs": len(rows)}


def model_error(rows):
    """The caching model's peak reserved against what PyTorch measured, |relative error|."""
    errors = sorted(abs(r["caching_reserved_gib"] - r["measured_reserved_gib"])
                    / r["measured_reserved_gib"] for r in rows)
    return (f"The caching model against PyTorch's measured peak reserved: median |error| "
            f"{100 * statistics.median(errors):.1f}%, maximum {100 * errors[-1]:.1f}% "
            f"({len(rows)} runs).")


def run_table(rows):
    header = ["run", "strategy", "batch", "measured allocated / reserved (frag.)",
              "caching model reserved (frag.)", "GMLake model reserved (frag.)",
              "saved (GB)", "frag. removed (points)", "stitches"]
    cells = [[r["run"], r["strategy"], r["batch"],
              f"{r['measured_allocated_gib']:.2f} / {r['measured_reserved_gib']:.2f} GiB "
              f"({r['measured_frag_pct']:.1f}%)",
              f"{r['caching_reserved_gib']:.2f} GiB ({r['caching_frag_pct']:.1f}%)",
              f"{r['gmlake_reserved_gib']:.2f} GiB ({r['gmlake_frag_pct']:.1f}%)",
              f"{r['saved_gb']:.2f}", f"{r['points']:.1f}", r["stitches"]] for r in rows]
    return markdown_table(header, cells)


def claims_table(ours):
    header = ["claim", "GMLake paper (8 LLMs, A100-80GB, ZeRO-3 on 4 GPUs)",
              f"ours (simulated GMLake vs caching, {ours['runs']} H200 histories)"]
    return markdown_table(header, [[text, f"{PAPER[key]:g}", f"{ours[key]:.1f}"]
                                          for key, text in CLAIMS])


SERIES = [("llama2-7b", "lora-recompute-zero"), ("llama2-13b", "lora-recompute-zero"),
          ("llama2-7b", "lora-recompute")]


def series(rows, model, technique):
    return sorted((r for r in rows if r["model"] == model and r["technique"] == technique),
                  key=lambda r: r["batch"])


def batch_table(rows):
    header = ["model", "strategy", "batch", "caching reserved (GiB)", "caching frag. (%)",
              "saved (GB)", "frag. removed (points)", "stitches"]
    cells = [[r["model"], r["strategy"], r["batch"], f"{r['caching_reserved_gib']:.1f}",
              f"{r['caching_frag_pct']:.1f}", f"{r['saved_gb']:.2f}", f"{r['points']:.1f}",
              r["stitches"]]
             for model, technique in SERIES for r in series(rows, model, technique)]
    return markdown_table(header, cells)


def by_footprint(rows, gib=30):
    """The mean saving of the LR and LRO histories below and from GIB reserved."""
    lines = []
    for label, keep in ((f"under {gib} GiB", lambda r: r["caching_reserved_gib"] < gib),
                        (f"{gib} GiB or more", lambda r: r["caching_reserved_gib"] >= gib)):
        some = [r for r in rows if r["strategy"] in ("LR", "LRO") and keep(r)]
        if some:
            lines.append(f"LR and LRO histories reserving {label} (caching model): {len(some)}, "
                         f"saved {statistics.mean(r['saved_gb'] for r in some):.2f} GB mean, "
                         f"{statistics.mean(r['points'] for r in some):.1f} points mean.")
    return lines


def fraglimit_rows(sim_dir, rows):
    """GMLake's fragLimit swept on the 7B LRO histories: saved GB at each limit."""
    by_name = {r["run"]: r for r in rows}
    out = []
    for path in sorted(glob.glob(os.path.join(sim_dir, "fraglimit", "*.json"))):
        name, limit = os.path.basename(path)[:-5].rsplit("-", 1)
        doc = load(path)
        gmlake = {r["allocator"]: r for r in doc["results"]}["gmlake"]
        base = by_name[name]
        out.append({"run": name, "batch": base["batch"], "frag_limit_mib": int(limit),
                    "saved_gb": base["caching_reserved_gib"] * GiB / GB
                    - gmlake["peak_reserved"] / GB,
                    "points": base["caching_frag_pct"] - 100 * gmlake["fragmentation"],
                    "stitches": gmlake["counters"].get("stitches", 0)})
    return sorted(out, key=lambda r: (r["batch"], r["frag_limit_mib"]))


def fraglimit_table(frows):
    limits = sorted({r["frag_limit_mib"] for r in frows})
    runs = sorted({(r["batch"], r["run"]) for r in frows})
    cell = {(r["run"], r["frag_limit_mib"]): r for r in frows}
    header = ["run"] + [f"fragLimit {m} MiB" for m in limits]
    body = [[run] + [f"{cell[(run, m)]['saved_gb']:.2f} GB, {cell[(run, m)]['points']:.1f} pt "
                     f"({cell[(run, m)]['stitches']})" for m in limits] for _, run in runs]
    return markdown_table(header, body)


def plot(rows, frows, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    ax = axes[0]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["saved_gb"] for r in rows], 0.4, label="saved (GB)")
    ax.bar([x + 0.2 for x in xs], [r["points"] for r in rows], 0.4,
           label="fragmentation removed (points)")
    for key, style in (("saved_gb_mean", "--"), ("saved_gb_max", ":")):
        ax.axhline(PAPER[key], color="C0", ls=style, lw=1,
                   label=f"paper: {PAPER[key]:g} GB {key.rsplit('_', 1)[1]}")
    for key, style in (("points_mean", "--"), ("points_max", ":")):
        ax.axhline(PAPER[key], color="C1", ls=style, lw=1,
                   label=f"paper: {PAPER[key]:g} points {key.rsplit('_', 1)[1]}")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['model'].removeprefix('llama2-')} {r['strategy']} b{r['batch']}"
                        for r in rows], rotation=60, ha="right", fontsize=7)
    ax.set_title("GMLake model vs caching model, per H200 history")
    ax.legend(fontsize=6)
    ax = axes[1]
    for model, technique in SERIES:
        s = series(rows, model, technique)
        label = f"{model} {STRATEGY[technique]}"
        ax.plot([r["caching_reserved_gib"] for r in s], [r["saved_gb"] for r in s], "o-",
                label=label)
        for r in s:
            ax.annotate(f"b{r['batch']}", (r["caching_reserved_gib"], r["saved_gb"]),
                        fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axhline(PAPER["saved_gb_mean"], color="k", ls="--", lw=1, label="paper mean")
    ax.axhline(PAPER["saved_gb_max"], color="k", ls=":", lw=1, label="paper max")
    ax.set_xlabel("peak reserved by the caching allocator (GiB)")
    ax.set_ylabel("saved by GMLake (GB)")
    ax.set_title("the batch sweep: saving grows with the footprint")
    ax.legend(fontsize=7)
    ax = axes[2]
    for run in sorted({r["run"] for r in frows}, key=lambda n: int(n.rsplit("-b", 1)[1])):
        pts = [r for r in frows if r["run"] == run]
        ax.plot([r["frag_limit_mib"] for r in pts], [r["saved_gb"] for r in pts], "o-",
                label=run.removeprefix("llama2-"))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GMLake fragLimit (MiB; default 512)")
    ax.set_ylabel("saved by GMLake (GB)")
    ax.set_title("stitching only serves requests of fragLimit or more")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


SNAPSHOTS = ["experiments/alloc/data/h200-large/snapshots",
             "experiments/alloc/data/h200-large-batches/snapshots"]
FRAG_LIMITS_MIB = [32, 64, 128, 256, 512, 1024]
FRAG_LIMIT_RUNS = "llama2-7b-lora-recompute-zero-b*.pickle.zst"  # the 7B LRO histories


def run(out, claims_path, write_reports=False, sweep_args=()):
    """The whole evaluation, from the repository root: the simulations into out/papers/gmlake/,
    then the report, which places itself by WRITE_REPORTS (OUT and CLAIMS_PATH name the same
    places). No sweep: SWEEP_ARGS are not used."""
    sims = "out/papers/gmlake"
    os.makedirs(f"{sims}/sim", exist_ok=True)
    os.makedirs(f"{sims}/fraglimit/configs", exist_ok=True)
    for folder in SNAPSHOTS:
        for t in sorted(glob.glob(f"{folder}/*.pickle.zst")):
            name = os.path.basename(t)[:-len(".pickle.zst")]
            steps.faultline("alloc", "run", "--history", t,
                            "--config", "configs/alloc/default.json",
                            "--out", f"{sims}/sim/{name}.json")
    for mib in FRAG_LIMITS_MIB:
        config = f"{sims}/fraglimit/configs/{mib}.json"
        with open(config, "w") as f:
            f.write(json.dumps({"allocators": ["gmlake"],
                                "options": {"gmlake_frag_limit": mib << 20}}) + "\n")
        for t in sorted(t for folder in SNAPSHOTS
                        for t in glob.glob(f"{folder}/{FRAG_LIMIT_RUNS}")):
            name = os.path.basename(t)[:-len(".pickle.zst")]
            steps.faultline("alloc", "run", "--history", t, "--config", config,
                            "--out", f"{sims}/fraglimit/{name}-{mib}.json")
    return main([sims] + (["--write-reports"] if write_reports else []))


def main(argv=None, prog=None):
    ap = steps.parser(__doc__, prog, "SIM_DIR")
    ap.add_argument("--write-reports", action="store_true")
    args = ap.parse_args(argv)
    reports = reports_dir("papers/gmlake", "", args.write_reports,
                                 out_root=os.path.join(REPO, "out", "papers", "gmlake"))
    claims_path = (os.path.join(PAPER_DIR, "claims.json") if args.write_reports
                   else os.path.join(reports, "claims.json"))
    rows = rows_of(args.sim_dir)
    frows = fraglimit_rows(args.sim_dir, rows)
    ours = summary(rows)
    rev = revision()
    setting = (f"{ours['runs']} allocation histories captured on one H200 (Llama-2-7B and "
               f"13B shapes, random init, seq 1024; L, LR, LRO = LoRA + recompute + ZeRO-3-style "
               f"offload of parameters and optimizer state, R; batch 4-64), replayed through "
               f"faultline's caching and GMLake models (configs/alloc/default.json, fragLimit "
               f"512 MiB); GB = 1e9 bytes")
    claims = [{"paper": "gmlake", "claim": text, "paper_value": PAPER[key],
               "our_value": round(ours[key], 2), "setting": setting, "command": COMMAND}
              for key, text in CLAIMS]
    write_json(claims_path, claims)
    write_lines(os.path.join(reports, "table.md"),
                       claims_table(ours) + [""] + run_table(rows) + ["", model_error(rows)])
    write_csv(os.path.join(reports, "table.csv"),
                     [{k: v for k, v in r.items() if k != "sim_config"} for r in rows])
    write_lines(os.path.join(reports, "batch.md"),
                       batch_table(rows) + [""] + by_footprint(rows))
    write_lines(os.path.join(reports, "fraglimit.md"), fraglimit_table(frows))
    write_json(os.path.join(reports, "results.json"), {
        "revision": rev, "paper": PAPER, "paper_source": SOURCE, "ours": ours,
        "sim_config": rows[0]["sim_config"], "sim_revision": rows[0]["sim_revision"],
        "campaigns": CAMPAIGNS, "runs": [{k: v for k, v in r.items() if k != "sim_config"}
                                         for r in rows], "fraglimit": frows})
    plot(rows, frows, os.path.join(reports, "gmlake.png"))
    print("\n".join(claims_table(ours)) + "\n\n" + model_error(rows))
    print(f"\nwritten to {reports} and {claims_path}")

