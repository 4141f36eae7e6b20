"""Two GPUs, live against simulated: the rows experiments/campaign.sh harvest measured,
each simulated on the same setup, side by side.

    experiments/live/fidelity.py simulate-two-gpu LIVE_DIR OUT_DIR [--faultline BIN]

LIVE_DIR is a campaign (experiments/multigpu/data/NAME/). For every live result in it (the
variant read from the result's policy and parameters, as `campaign.sh harvest` sets them) this runs
`faultline sim` on the campaign's topology (its manifest's gpu_profile, default h200x2: calibrated
H200 profiles, measured NVLink; --topology overrides) in capacity
mode "budget" with the live run's policy and parameters; GPU 1 offers the live run's
--peer-budget (idle_gpus) and keeps the same reserve; nothing is written back in the background,
as live (one copy per page). It writes OUT_DIR/fidelity.md, fidelity.csv, fidelity.png and
summary.json (median and max time error, whether the simulator orders the variants as the GPU does,
each variant's time relative to the host variant of its group live and simulated, the common sim
config, the revisions). The relative times leave out what the variants share (the fault path of
one GPU) and so measure the two-GPU part of the model.
"""
import argparse
import json
import os
import statistics

import lab.sim
from lab.campaigns import load_manifest, load_runs, median_of_repeats
from lab.sim import replayed_trace
from lab.tables import pyplot, save_figure, write_csv, write_json, write_lines

SUMMARY = "any folder of two-GPU live results against the simulator"

VARIANTS = ["host", "preevict", "peer", "harvest"]


def sim_config(live, topology):
    cfg = live["config"]
    return {"description": "two GPUs: the live harvest experiment in the simulator",
            "topology": topology,
            "capacity": {"fraction_of_footprint": cfg["budget"]["fraction_of_footprint"],
                         "mode": "budget"},
            "driver": {"peer_reserve_bytes": cfg["peer_reserve_bytes"],
                       "peer_write_back": False},
            "policy": cfg["policy"],
            "idle_gpus": [{"gpu": 1, "bytes": cfg["peer_budget_bytes"]}]}


def load_campaign(live_dir, topology=None):
    """A campaign's harvester runs (the neighbour's left out), one per trace, variant and budget
    (the median of its repeats, .r2.json and on, their times in `repeats_s`), its manifest, and
    the topology to simulate it on: TOPOLOGY, else the manifest's gpu_profile, else h200x2."""
    runs = [r for r in load_runs(live_dir)
            if os.path.basename(r["path"]) != "neighbour.json"]
    for r in runs:
        r["variant"] = variant(r)
    runs = median_of_repeats(runs, key=("trace", "variant", "budget"))
    manifest = load_manifest(live_dir)
    return runs, manifest, topology or manifest.get("gpu_profile", "h200x2")


def simulate(faultline, live, topology, traces_revision=None):
    trace = replayed_trace(live["trace"]["path"], live.get("faultline", {}).get("git_revision"),
                           traces_revision)
    return lab.sim.simulate(trace, sim_config(live, topology), faultline)


def variant(run):
    """`campaign.sh harvest`'s variant from the policy and parameters it gave the replay."""
    if run["policy"] == "ondemand":
        return "host"
    params = run["params"]
    if params.get("multi_path_prefetch", True):
        return "harvest"
    return "peer" if params.get("evict_to_peer", True) else "preevict"


def row(run, sim):
    lr, sr = run["results"], sim["results"]
    gb = 1e9
    return {"trace": run["trace"], "variant": run["variant"], "budget": run["budget"],
            "live_s": lr["total_time_ns"] / 1e9, "sim_s": sr["total_time_ns"] / 1e9,
            "live_repeats_s": run["repeats_s"],
            "time_error": sr["total_time_ns"] / lr["total_time_ns"] - 1,
            "live_to_peer_gb": lr["peers"]["bytes_to_peer"] / gb,
            "sim_to_peer_gb": sr["peers"]["bytes_to_peer"] / gb,
            "live_staged_gb": lr["peers"]["bytes_staged_on_peer"] / gb,
            "sim_staged_gb": sr["peers"]["bytes_staged_on_peer"] / gb,
            "live_d2d_gb": lr["peers"]["bytes_device_to_device"] / gb,
            "sim_d2d_gb": (sr["peers"]["bytes_to_peer"] + sr["peers"]["bytes_from_peer"]) / gb,
            "live_htod_gb": lr["bytes_host_to_gpu"] / gb,
            "sim_htod_gb": (sr["bytes_host_to_gpu"] + sr["peers"]["bytes_staged_on_peer"]) / gb,
            "live_dtoh_gb": lr["bytes_gpu_to_host"] / gb,
            "sim_dtoh_gb": (sr["bytes_gpu_to_host"] + sr["peers"]["bytes_written_back"]) / gb}


def add_relative(rows):
    """Each row's time over its group's host (ondemand) variant, live and simulated."""
    hosts = {(r["trace"], r["budget"]): r for r in rows if r["variant"] == "host"}
    for r in rows:
        h = hosts.get((r["trace"], r["budget"]))
        r["live_vs_host"] = r["live_s"] / h["live_s"] if h else None
        r["sim_vs_host"] = r["sim_s"] / h["sim_s"] if h else None
        r["relative_error"] = (r["sim_vs_host"] / r["live_vs_host"] - 1) if h else None


def within_spread(group):
    """Whether the variant the simulator picks is, live, within the repeats' spread of the live
    winner (its fastest repeat no slower than the winner's slowest): with one run each, only
    when it is the live winner."""
    live_best = min(group, key=lambda r: r["live_s"])
    sim_best = min(group, key=lambda r: r["sim_s"])
    return min(sim_best["live_repeats_s"]) <= max(live_best["live_repeats_s"])


def order(rows, key):
    return [r["variant"] for r in sorted(rows, key=lambda r: r[key])]


def relative(row):
    if row["live_vs_host"] is None:
        return "-"
    return f"{row['live_vs_host']:.2f} / {row['sim_vs_host']:.2f}"


def write(rows, out):
    fields = [k for k in rows[0] if k != "live_repeats_s"] + ["live_repeats_s"]
    write_csv(os.path.join(out, "fidelity.csv"), rows, fields)
    lines = ["| trace | variant | budget | live s | sim s | error | over host live/sim | "
             "to peer GB live/sim | "
             "staged GB live/sim | device-to-device GB live/sim | host->GPU GB live/sim | "
             "GPU->host GB live/sim |", "|" + "---|" * 12]
    for r in rows:
        lines.append(
            f"| {r['trace']} | {r['variant']} | {r['budget']:.2f} | {r['live_s']:.2f} | "
            f"{r['sim_s']:.2f} | {r['time_error']:+.0%} | {relative(r)} | "
            f"{r['live_to_peer_gb']:.1f} / "
            f"{r['sim_to_peer_gb']:.1f} | {r['live_staged_gb']:.1f} / {r['sim_staged_gb']:.1f} | "
            f"{r['live_d2d_gb']:.1f} / {r['sim_d2d_gb']:.1f} | {r['live_htod_gb']:.1f} / "
            f"{r['sim_htod_gb']:.1f} | {r['live_dtoh_gb']:.1f} / {r['sim_dtoh_gb']:.1f} |")
    write_lines(os.path.join(out, "fidelity.md"), lines)


def plot(rows, path, device):
    plt = pyplot()
    traces = sorted({r["trace"] for r in rows})
    fig, axes = plt.subplots(1, len(traces), figsize=(5 * len(traces), 3.6), squeeze=False)
    for ax, t in zip(axes[0], traces):
        rs = {r["variant"]: r for r in rows if r["trace"] == t}
        names = [v for v in VARIANTS if v in rs]
        x = range(len(names))
        ax.bar([i - 0.2 for i in x], [rs[v]["live_s"] for v in names], 0.4, label=f"live ({device})")
        ax.bar([i + 0.2 for i in x], [rs[v]["sim_s"] for v in names], 0.4, label="simulated")
        ax.set_xticks(list(x))
        ax.set_xticklabels(names)
        ax.set_ylabel("time (s)")
        ax.set_title(f"{t}, budget {rows[0]['budget']:.0%}")
    axes[0][0].legend()
    fig.tight_layout()
    save_figure(fig, path)


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("live_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--faultline", default="build/faultline")
    ap.add_argument("--topology", help="default: the manifest's gpu_profile, else h200x2")
    args = ap.parse_args(argv)
    runs, manifest, topology = load_campaign(args.live_dir, args.topology)
    lives = [r["doc"] for r in runs]
    sims = [simulate(args.faultline, live, topology, manifest.get("traces_revision"))
            for live in lives]
    rows = [row(r, s) for r, s in zip(runs, sims)]
    rows.sort(key=lambda r: (r["trace"], r["budget"], VARIANTS.index(r["variant"])))
    add_relative(rows)
    repeats = max(len(r["live_repeats_s"]) for r in rows)
    os.makedirs(args.out_dir, exist_ok=True)
    write(rows, args.out_dir)
    plot(rows, os.path.join(args.out_dir, "fidelity.png"), lives[0]["config"]["device"])
    errors = [abs(r["time_error"]) for r in rows]
    relative_errors = [abs(r["relative_error"]) for r in rows
                       if r["relative_error"] is not None and r["variant"] != "host"] or [0.0]
    groups = {}
    for r in rows:
        groups.setdefault((r["trace"], r["budget"]), []).append(r)
    ranking = {f"{t} {b}": {"live": order(g, "live_s"), "sim": order(g, "sim_s"),
                            "sim_winner_within_live_spread": within_spread(g)}
               for (t, b), g in groups.items()}
    shared = sim_config(lives[0], topology)
    shared.pop("policy")
    summary = {"runs": len(rows),
               "median_abs_time_error": statistics.median(errors),
               "max_abs_time_error": max(errors),
               "ranking": ranking,
               "ranking_identical": sum(v["live"] == v["sim"] for v in ranking.values()),
               "winner_same": sum(v["live"][0] == v["sim"][0] for v in ranking.values()),
               "winner_within_live_spread": sum(v["sim_winner_within_live_spread"]
                                                for v in ranking.values()),
               "repeats": repeats,
               "median_abs_relative_error": statistics.median(relative_errors),
               "max_abs_relative_error": max(relative_errors),
               "sim_config_common": shared,
               "live_revisions": sorted({live["faultline"]["git_revision"] for live in lives}),
               "sim_revision": sims[0]["faultline"]["git_revision"],
               "device": lives[0]["config"]["device"]}
    write_json(os.path.join(args.out_dir, "summary.json"), summary, sort_keys=True)
    print(json.dumps({k: summary[k] for k in ("runs", "median_abs_time_error",
                                             "max_abs_time_error", "ranking_identical",
                                             "winner_same", "winner_within_live_spread",
                                             "repeats", "median_abs_relative_error",
                                             "max_abs_relative_error")}))
