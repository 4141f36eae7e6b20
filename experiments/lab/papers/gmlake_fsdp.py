"""GMLake under sharded data parallelism, live: an alloc-fsdp campaign beside the paper's numbers.

    experiments/papers/run.py gmlake-fsdp [CAMPAIGN_DIR] [--write-reports] [--out DIR]
        [--faultline BIN]

CAMPAIGN_DIR (default experiments/alloc/data/h200x2-fsdp) holds NAME-ALLOCATOR.rankR.json for the
allocators default (PyTorch's caching allocator), expandable and faultline (our GMLake, live) and
the default runs' histories in snapshots/. Per configuration and GPU (the mean of the two ranks):
saved = caching's peak reserved - GMLake's, points = the difference in fragmentation (1 - peak
allocated / peak reserved); a configuration that ran out of memory is listed, not counted. Each
history is also replayed through faultline's models (`faultline alloc run`), so that the models
are checked against the live allocators on the same job. Writes fsdp.md, fsdp.json and
claims-fsdp.json into out/papers/gmlake/fsdp/, or with --write-reports fsdp.md and fsdp.json into
experiments/papers/gmlake/reports/ and claims-fsdp.json into experiments/papers/gmlake/.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

from lab.campaigns import load_manifest
from lab.papers.gmlake import GB, PAPER, PAPER_DIR, SOURCE, STRATEGY, GiB, revision
from lab.paths import REPO
from lab.tables import markdown_table, write_json, write_lines

SUMMARY = "GMLake under FSDP over two GPUs, live, beside the models (claims-fsdp.json)"

CAMPAIGN = "experiments/alloc/data/h200x2-fsdp"
COMMAND = ("experiments/campaign.sh alloc-fsdp OUT (two GPUs), then "
           "experiments/papers/run.py gmlake-fsdp --write-reports")
ALLOCATORS = ["default", "expandable", "faultline"]
# GMLake stitches only requests of at least fragLimit (512 MiB by default, the live runs' value);
# FSDP's sharded requests are mostly smaller, so the report also replays each history through the
# GMLake model at these limits (model only: the live allocator ran at the default).
WHAT_IF_FRAG_LIMITS_MIB = [64, 128]
CLAIMS = [("saved_gb_mean", "GPU memory saved vs PyTorch's caching allocator under FSDP over two "
           "GPUs, live, mean per GPU (GB)"),
          ("saved_gb_max", "GPU memory saved vs PyTorch's caching allocator under FSDP over two "
           "GPUs, live, max per GPU (GB)"),
          ("points_mean", "fragmentation removed under FSDP over two GPUs, live, mean "
           "(percentage points)"),
          ("points_max", "fragmentation removed under FSDP over two GPUs, live, max "
           "(percentage points)")]


def load(path):
    with open(path) as f:
        return json.load(f)


def ranks(folder, name, allocator):
    """The two ranks' results of one run, or [] where it is missing."""
    return [load(p) for p in sorted(glob.glob(os.path.join(folder, f"{name}-{allocator}.rank*.json")))]


def per_gpu(results):
    """Mean over ranks; None when a rank failed (its out-of-memory flag kept)."""
    if not results:
        return None
    if not all(r["ok"] for r in results):
        return {"ok": False, "oom": any(r["oom"] for r in results),
                "peak_allocated": max(r["peak_allocated"] or 0 for r in results)}
    mean = lambda key: statistics.mean(r[key] for r in results)  # noqa: E731
    return {"ok": True, "oom": False, "peak_allocated": mean("peak_allocated"),
            "peak_reserved": mean("peak_reserved"), "fragmentation": mean("fragmentation"),
            "step_s": mean("median_step_s"), "params_b": results[0]["params"] / 1e9}


def simulate(faultline, snapshots, frag_limit_mib=None):
    """Each rank's history through faultline's caching, expandable and GMLake models (only
    GMLake's at FRAG_LIMIT_MIB, when given): the mean peak reserved and fragmentation per model
    over the ranks."""
    config = load(os.path.join(REPO, "configs/alloc/default.json"))
    if frag_limit_mib is not None:
        config["allocators"] = ["gmlake"]
        config["options"]["gmlake_frag_limit"] = frag_limit_mib << 20
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        config_path = os.path.join(tmp, "alloc.json")
        write_json(config_path, config)
        for path in snapshots:
            result = os.path.join(tmp, "result.json")
            subprocess.run([faultline, "alloc", "run", "--history", path, "--config",
                            config_path, "--out", result], check=True, capture_output=True)
            for r in load(result)["results"]:
                out.setdefault(r["allocator"], []).append(r)
    return {model: {"peak_reserved": statistics.mean(r["peak_reserved"] for r in rs),
                    "fragmentation": statistics.mean(r["fragmentation"] for r in rs)}
            for model, rs in out.items()}


def rows_of(folder, faultline):
    names = sorted({os.path.basename(p).rsplit("-", 1)[0]
                    for p in glob.glob(os.path.join(folder, "*-default.rank0.json"))})
    rows = []
    for name in names:
        first = ranks(folder, name, "default")[0]
        live = {a: per_gpu(ranks(folder, name, a)) for a in ALLOCATORS}
        base = first["technique"].split("+")[0]
        row = {"run": name, "model": first["model"], "technique": first["technique"],
               "strategy": STRATEGY.get(base, base) + "+FSDP", "batch": first["batch"],
               "world_size": first["world_size"], "live": live, "sim": None}
        if all(live[a] and live[a]["ok"] for a in ALLOCATORS):
            d, g = live["default"], live["faultline"]
            row["saved_gb"] = (d["peak_reserved"] - g["peak_reserved"]) / GB
            row["points"] = 100 * (d["fragmentation"] - g["fragmentation"])
            snapshots = sorted(glob.glob(os.path.join(folder, "snapshots", name + ".rank*")))
            if snapshots:
                row["sim"] = simulate(faultline, snapshots)
                row["what_if"] = {}
                for mib in WHAT_IF_FRAG_LIMITS_MIB:
                    model = simulate(faultline, snapshots, mib)["gmlake"]
                    row["what_if"][str(mib)] = {
                        "saved_gb": (d["peak_reserved"] - model["peak_reserved"]) / GB,
                        "points": 100 * (d["fragmentation"] - model["fragmentation"])}
        rows.append(row)
    return rows


def cell(x):
    if x is None:
        return "missing"
    if not x["ok"]:
        return "out of memory" if x["oom"] else "failed"
    return (f"{x['peak_allocated'] / GiB:.2f} / {x['peak_reserved'] / GiB:.2f} GiB "
            f"({100 * x['fragmentation']:.1f}%)")


def table(rows):
    header = ["run", "strategy", "batch per GPU", "caching: allocated / reserved (frag.)",
              "expandable", "GMLake (faultline, live)", "saved GB", "points",
              "models: caching / GMLake reserved GiB (frag.)"]
    body = []
    for r in rows:
        sim = r["sim"]
        models = (f"{sim['caching']['peak_reserved'] / GiB:.2f} "
                  f"({100 * sim['caching']['fragmentation']:.1f}%) / "
                  f"{sim['gmlake']['peak_reserved'] / GiB:.2f} "
                  f"({100 * sim['gmlake']['fragmentation']:.1f}%)") if sim else "-"
        body.append([r["run"], r["strategy"], r["batch"], cell(r["live"]["default"]),
                     cell(r["live"]["expandable"]), cell(r["live"]["faultline"]),
                     f"{r['saved_gb']:.2f}" if "saved_gb" in r else "-",
                     f"{r['points']:.1f}" if "points" in r else "-", models])
    return markdown_table(header, body)


def what_if_table(rows):
    header = ["run", *(f"GMLake model, fragLimit {mib} MiB: saved GB / points"
                       for mib in WHAT_IF_FRAG_LIMITS_MIB)]
    body = [[r["run"], *(f"{r['what_if'][str(m)]['saved_gb']:.2f} / "
                         f"{r['what_if'][str(m)]['points']:.1f}" for m in WHAT_IF_FRAG_LIMITS_MIB)]
            for r in rows if r.get("what_if")]
    return markdown_table(header, body)


def setting_of(rows, ours, manifest):
    """The claims' setting, from the runs and the manifest's machine text."""
    machine = manifest.get("machine", [])
    text = machine[0].get("text", []) if machine and isinstance(machine[0], dict) else []
    gpus = [line.split(",")[0] for line in text if line.startswith("NVIDIA")]
    where = f"{len(gpus)}× {gpus[0]}" if gpus else "two GPUs"
    runs = "; ".join(f"{r['model']} {r['strategy']} batch {r['batch']}" for r in rows
                     if "saved_gb" in r)
    lost = ", ".join(ours["not_counted"])
    return (f"{ours['configurations']} configurations live under FSDP2 over {where} (random "
            f"init, seq 1024: {runs}{'; not counted: ' + lost if lost else ''}): PyTorch's caching "
            f"allocator against faultline's GMLake allocator live (libfaultline_alloc.so, "
            f"fragLimit 512 MiB); per GPU, GB = 1e9 bytes. {manifest.get('caveat', '')}").strip()


def summary(rows):
    done = [r for r in rows if "saved_gb" in r]
    if not done:
        sys.exit("gmlake-fsdp: no configuration ran under all three allocators")
    saved, points = [r["saved_gb"] for r in done], [r["points"] for r in done]
    model_errors = [abs(r["sim"][m]["peak_reserved"] / r["live"][a]["peak_reserved"] - 1)
                    for r in done if r["sim"] for m, a in (("caching", "default"),
                                                           ("gmlake", "faultline"))]
    return {"configurations": len(done), "saved_gb_mean": statistics.mean(saved),
            "saved_gb_max": max(saved), "points_mean": statistics.mean(points),
            "points_max": max(points),
            "model_reserved_error_max": max(model_errors) if model_errors else None,
            "not_counted": [r["run"] for r in rows if "saved_gb" not in r]}


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("campaign", nargs="?", default=os.path.join(REPO, CAMPAIGN))
    ap.add_argument("--write-reports", action="store_true")
    ap.add_argument("--out", help="where the reports go without --write-reports (default "
                                  "out/papers/gmlake/fsdp)")
    ap.add_argument("--faultline", default=os.path.join(REPO, "build", "faultline"))
    args = ap.parse_args(argv)
    if not os.path.exists(args.faultline):
        sys.exit(f"gmlake-fsdp: {args.faultline} is missing: run ./setup.sh")
    out = (os.path.join(PAPER_DIR, "reports") if args.write_reports
           else args.out or os.path.join(REPO, "out", "papers", "gmlake", "fsdp"))
    claims_path = os.path.join(PAPER_DIR if args.write_reports else out, "claims-fsdp.json")
    os.makedirs(out, exist_ok=True)
    rows = rows_of(args.campaign, args.faultline)
    ours = summary(rows)
    manifest = load_manifest(args.campaign)
    setting = setting_of(rows, ours, manifest)
    claims = [{"paper": "gmlake", "claim": text, "paper_value": PAPER[key],
               "our_value": round(ours[key], 2), "setting": setting, "command": COMMAND}
              for key, text in CLAIMS]
    write_json(claims_path, claims)
    lines = ["# GMLake under FSDP over two GPUs, live", "",
             f"Campaign `{os.path.relpath(args.campaign, REPO)}` "
             f"(revision {manifest.get('revision')}, {manifest.get('date')}); report at "
             f"revision {revision()}. Per GPU: the mean of the two ranks.", "",
             *table(rows), "",
             f"Saved per GPU: mean {ours['saved_gb_mean']:.2f} GB, max "
             f"{ours['saved_gb_max']:.2f} GB (paper {PAPER['saved_gb_mean']:g} / "
             f"{PAPER['saved_gb_max']:g}); fragmentation removed: mean "
             f"{ours['points_mean']:.1f}, max {ours['points_max']:.1f} points (paper "
             f"{PAPER['points_mean']:g} / {PAPER['points_max']:g}). The models' peak reserved "
             f"against the live allocators': at most "
             f"{100 * (ours['model_reserved_error_max'] or 0):.1f}% apart.", "",
             "The GMLake model replaying the same histories at smaller fragLimits (GMLake "
             "stitches only requests of at least fragLimit; the live runs used 512 MiB):", "",
             *what_if_table(rows)]
    if manifest.get("caveat"):
        lines += ["", manifest["caveat"]]
    write_lines(os.path.join(out, "fsdp.md"), lines)
    write_json(os.path.join(out, "fsdp.json"), {
        "revision": revision(), "campaign": os.path.relpath(args.campaign, REPO),
        "paper": PAPER, "paper_source": SOURCE, "ours": ours, "runs": rows})
    print("\n".join(lines))
    print(f"\nwritten to {out} and {claims_path}")

