"""Where HUVM's multi-path prefetch gains or loses time, live against simulated: the `peer`
variant (victims to GPU 1, no prefetch) beside `harvest` (the same plus the multi-path prefetch),
split into migrations and faults. Migrations: the time between kernels (the calls issued before
each) plus, live, the time a kernel waited on the GPU for those copies to finish
(results.copy_wait_ns: the replay launches each kernel behind its copy stream; the simulator
starts a kernel only once its migrations are done, so they are all between kernels). Faults: the
kernels' stall less that wait, and the stall per fault. Campaigns from before copy_wait_ns count
the whole stall as faults. Reads a campaign's per-kernel rows (per-kernel.tar.zst, written by `campaign.sh harvest` with
PER_KERNEL=1; the first repeat of each run) and simulates the same runs with per-kernel rows.

    experiments/live/diagnose.py prefetch-split CAMPAIGN [--write-reports] [--faultline BIN]

Writes prefetch_split.md and prefetch_split.json into out/multigpu/CAMPAIGN/, or with
--write-reports into experiments/multigpu/reports/CAMPAIGN/.
"""
import argparse
import io
import json
import os
import sys
import tarfile

import zstandard

from lab.campaigns import load_manifest, repeat_of
from lab.multigpu import live_vs_sim
from lab.paths import REPO
from lab.sim import replayed_trace, simulate
from lab.tables import markdown_table, reports_dir, write_json, write_lines

SUMMARY = "a two-GPU campaign's time waiting for prefetches against faults, live and simulated"

VARIANTS = ["peer", "harvest"]


def per_kernel_runs(campaign_dir):
    """{file name: run} for the first repeat of each run in the campaign's per-kernel archive."""
    path = os.path.join(campaign_dir, "per-kernel.tar.zst")
    if not os.path.exists(path):
        sys.exit(f"prefetch_split: {path} is missing (run `campaign.sh harvest` with PER_KERNEL=1)")
    with open(path, "rb") as f:
        data = zstandard.ZstdDecompressor().stream_reader(f).read()
    runs = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            name = os.path.basename(member.name)
            if member.isfile() and name.endswith(".json") and repeat_of(name) == 1:
                runs[name] = json.load(tar.extractfile(member))
    return runs


def split(kernels):
    """Seconds inside kernels and between them."""
    inside = sum(k["end_ns"] - k["start_ns"] for k in kernels)
    between = sum(b["start_ns"] - a["end_ns"] for a, b in zip(kernels, kernels[1:]))
    return inside / 1e9, between / 1e9


def measure(run, sim):
    rows = {}
    for side, doc in (("live", run), ("sim", sim)):
        inside, between = split(doc["kernels"])
        r = doc["results"]
        wait = r.get("copy_wait_ns", 0) / 1e9
        fault_stall = r["fault_stall_ns"] / 1e9 - wait
        rows[side] = {"total_s": r["total_time_ns"] / 1e9, "kernels_s": inside,
                      "between_s": between, "copy_wait_s": wait if "copy_wait_ns" in r else None,
                      "migrations_s": between + wait, "faults": r["faults"],
                      "stall_s": fault_stall,
                      "stall_us_per_fault": fault_stall * 1e6 / max(1, r["faults"])}
    return rows


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("campaign")
    ap.add_argument("--write-reports", action="store_true")
    ap.add_argument("--faultline", default=os.path.join(REPO, "build", "faultline"))
    args = ap.parse_args(argv)
    folder = os.path.join(REPO, "experiments", "multigpu", "data", args.campaign)
    manifest = load_manifest(folder)
    topology = manifest.get("gpu_profile", "h200x2")
    runs = per_kernel_runs(folder)
    groups = []
    for trace in sorted({n.split("-peer-")[0] for n in runs if "-peer-" in n}):
        group = {"trace": trace}
        for v in VARIANTS:
            name = next((n for n in runs if n.startswith(f"{trace}-{v}-")), None)
            if name is None:
                sys.exit(f"prefetch_split: no {trace} {v} run in {folder}")
            live = runs[name]
            config = live_vs_sim.sim_config(live, topology)
            config["per_kernel"] = True
            trace_path = replayed_trace(live["trace"]["path"],
                                        live.get("faultline", {}).get("git_revision"),
                                        manifest.get("traces_revision"))
            group[v] = measure(live, simulate(trace_path, config, args.faultline))
        groups.append(group)
    header = ["trace", "side", "total s peer / harvest", "between kernels s",
              "copies waited in kernels s", "migrations s", "faults", "faults' stall s",
              "stall per fault (us)"]
    body = []
    for g in groups:
        for side in ("live", "sim"):
            p, h = g["peer"][side], g["harvest"][side]
            wait = (f"{p['copy_wait_s']:.2f} / {h['copy_wait_s']:.2f}"
                    if p["copy_wait_s"] is not None
                    else "none: kernels start after them" if side == "sim" else "not measured")
            body.append([g["trace"], side, f"{p['total_s']:.2f} / {h['total_s']:.2f}",
                         f"{p['between_s']:.2f} / {h['between_s']:.2f}", wait,
                         f"{p['migrations_s']:.2f} / {h['migrations_s']:.2f}",
                         f"{p['faults']} / {h['faults']}",
                         f"{p['stall_s']:.2f} / {h['stall_s']:.2f}",
                         f"{p['stall_us_per_fault']:.1f} / {h['stall_us_per_fault']:.1f}"])
    out = reports_dir("multigpu", args.campaign, args.write_reports)
    lines = [f"# Multi-path prefetch, live against simulated: `{args.campaign}`", "",
             f"peer (victims to GPU 1) / harvest (the same plus the multi-path prefetch), the "
             f"first repeat of each, simulated on `{topology}`. Faults are counted as each side "
             f"counts them (live: the replay's fault records; simulated: faulted pages), so "
             f"compare their change, not their values. Migrations: between kernels plus, live, "
             f"the copies a kernel waited for on the GPU (results.copy_wait_ns); faults' stall: "
             f"the kernels' stall less that wait.", "", *markdown_table(header, body)]
    write_lines(os.path.join(out, "prefetch_split.md"), lines)
    write_json(os.path.join(out, "prefetch_split.json"),
                      {"campaign": args.campaign, "topology": topology, "groups": groups})
    print("\n".join(lines))
