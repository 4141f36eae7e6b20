"""What a live two-GPU harvest campaign says about the cost of moving data between the GPUs under
load: the one cost the simulator's choice between harvesting and host pre-eviction turns on.

    experiments/papers/run.py huvm-peer-cost LIVE_DIR OUT_DIR [--faultline BIN]
                                             [--extra-us 0,100,200,400,800,1600]

LIVE_DIR is a campaign of `experiments/campaign.sh harvest` (the variants host, preevict, peer,
harvest of each trace and budget). Each live run (the median of its repeats) is simulated as
lab/multigpu/live_vs_sim.py does (the campaign's topology, capacity mode "budget"), with
GPU 0's peer-migration costs raised by
an extra cost X per 2 MB moved between the GPUs (peer_eviction_ns + X per chunk evicted to GPU 1,
peer_fault_migrate_ns + X/32 per 64 KB a fault brings from it), for each X of --extra-us. The
profile's own costs (X = 0) were measured in isolation by `faultline calibrate`; what they cost
while kernels run and host migrations share the migration stream only the two GPUs show. Per
trace and budget it reports:
  - fitted_extra_us: the X at which the simulated `peer` variant takes the live time (None when
    outside the swept range; the bound is given);
  - break_even_us: the X beyond which the simulated `peer` variant is slower than `preevict`
    (the simulator's choice of variant flips there);
  - the winner live, simulated at X = 0 and simulated at the fitted X.
Writes OUT_DIR/peer_cost.md, peer_cost.json and peer_cost.png.
"""
import json
import os

import lab.sim
from lab import steps
from lab.curves import crossing, interpolate
from lab.multigpu import live_vs_sim
from lab.paths import REPO
from lab.sim import replayed_trace
from lab.tables import markdown_table, pyplot, save_figure, write_json, write_lines

SUMMARY = ("the peer-migration cost under load a live two-GPU campaign implies, and the variant the "
           "simulator picks")

PEER_VARIANTS = ("peer", "harvest")  # the variants that move chunks to GPU 1


def sim_config(live, extra_ns, profile="h200x2"):
    """live_vs_sim's simulation of LIVE with GPU 0's peer costs raised by EXTRA_NS per 2 MB."""
    cfg = live_vs_sim.sim_config(live, profile)  # the topology and its GPUs share the name
    with open(os.path.join(REPO, "configs", "gpus", profile + ".json")) as f:
        base = json.load(f)
    gpu0 = {"profile": profile,
            "peer_eviction_ns": base["peer_eviction_ns"] + extra_ns,
            "peer_fault_migrate_ns": base["peer_fault_migrate_ns"] + extra_ns // 32}
    cfg["topology"] = {"profile": cfg["topology"],
                       "gpus": [{"name": "GPU0", "profile": gpu0},
                                {"name": "GPU1", "profile": profile}]}
    return cfg


def simulate(faultline, live, extra_ns, traces_revision=None, profile="h200x2"):
    """LIVE simulated on the trace it replayed (as live_vs_sim simulates it), GPU 0's peer costs
    raised by EXTRA_NS per 2 MB."""
    trace = replayed_trace(live["trace"]["path"], live.get("faultline", {}).get("git_revision"),
                           traces_revision)
    return lab.sim.simulate(trace, sim_config(live, extra_ns, profile), faultline)


def winner(times):
    return min(times, key=times.get)


def analyse(group, curves, extras):
    """GROUP: variant -> live seconds; CURVES: variant -> [(extra_us, sim seconds)]."""
    peer = curves["peer"]
    flat = {v: pts[0][1] for v, pts in curves.items() if v not in PEER_VARIANTS}
    fitted = crossing(peer, group["peer"])
    bound = None
    if fitted is None:
        bound = (f"< {extras[0]}" if group["peer"] < peer[0][1] else f"> {extras[-1]}")
    breakeven = crossing(peer, flat["preevict"]) if "preevict" in flat else None

    def sim_at(x):
        out = dict(flat)
        for v in PEER_VARIANTS:
            if v in curves:
                out[v] = interpolate(curves[v], x)
        return out

    at_fit = sim_at(fitted if fitted is not None else (extras[0] if bound.startswith("<")
                                                        else extras[-1]))
    return {"live_s": group, "sim_s_by_extra_us": curves,
            "fitted_extra_us": fitted, "fitted_bound_us": bound, "break_even_us": breakeven,
            "winner_live": winner(group), "winner_sim_calibrated": winner(sim_at(0)),
            "winner_sim_fitted": winner(at_fit), "sim_s_at_fitted": at_fit}


def plot(results, path):
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 3.6), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        for v, pts in r["sim_s_by_extra_us"].items():
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=f"sim {v}")
        for v, t in r["live_s"].items():
            ax.axhline(t, linestyle="--", linewidth=0.8, color="black" if v == "peer" else "grey")
            ax.annotate(f"live {v}", (0, t), fontsize=7, va="bottom")
        ax.set_xlabel("extra cost per 2 MB moved between the GPUs (µs)")
        ax.set_ylabel("time (s)")
        ax.set_title(name)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, path)


def table(results):
    rows = []
    for name, r in results.items():
        fit = (f"{r['fitted_extra_us']:.0f}" if r["fitted_extra_us"] is not None
               else r["fitted_bound_us"])
        be = f"{r['break_even_us']:.0f}" if r["break_even_us"] is not None else "outside the sweep"
        rows.append([name, fit, be, r["winner_live"], r["winner_sim_calibrated"],
                     r["winner_sim_fitted"]])
    return markdown_table(
        ["trace, budget", "fitted extra µs per 2 MB (live peer time)",
         "break-even µs (sim peer = preevict)", "winner live", "winner sim (calibrated)",
         "winner sim (fitted)"], rows)


def main(argv=None, prog=None):
    ap = steps.parser(__doc__, prog, "LIVE_DIR", "OUT_DIR", faultline="build/faultline")
    ap.add_argument("--extra-us", default="0,100,200,400,800,1600")
    args = ap.parse_args(argv)
    extras = sorted(int(x) for x in args.extra_us.split(","))
    # The campaign's own pair (its manifest's gpu_profile), as live_vs_sim simulates it.
    runs, manifest, profile = live_vs_sim.load_campaign(args.live_dir)
    traces_revision = manifest.get("traces_revision")
    groups = {}
    for r in runs:
        groups.setdefault(f"{r['trace']} {r['budget']}", {})[r["variant"]] = r
    results, revisions = {}, set()
    for name, by_variant in sorted(groups.items()):
        if "peer" not in by_variant:
            raise SystemExit(f"peer_cost: {name} has no `peer` variant in {args.live_dir}")
        curves = {}
        for v, run in by_variant.items():
            xs = extras if v in PEER_VARIANTS else extras[:1]
            pts = []
            for x in xs:
                sim = simulate(args.faultline, run["doc"], x * 1000, traces_revision, profile)
                revisions.add(sim["faultline"]["git_revision"])
                pts.append((x, sim["results"]["total_time_ns"] / 1e9))
            curves[v] = pts
        live = {v: run["results"]["total_time_ns"] / 1e9 for v, run in by_variant.items()}
        results[name] = analyse(live, curves, extras)
    os.makedirs(args.out_dir, exist_ok=True)
    doc = {"live_dir": args.live_dir, "extra_us": extras, "groups": results,
           "live_revisions": sorted({r["revision"] for r in runs}),
           "sim_revisions": sorted(revisions)}
    write_json(os.path.join(args.out_dir, "peer_cost.json"), doc, sort_keys=True)
    write_lines(os.path.join(args.out_dir, "peer_cost.md"), table(results))
    plot(results, os.path.join(args.out_dir, "peer_cost.png"))
    print("\n".join(table(results)))

