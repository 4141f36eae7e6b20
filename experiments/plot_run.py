#!/usr/bin/env python3
"""Figure for one `faultline sim` run: where the time went, what moved, and how the fault
batches behaved over the run (from the timeline, when given).

usage: plot_run.py RESULTS.json OUT.png [--timeline TIMELINE.json]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab.tables import pyplot, save_figure  # noqa: E402

plt = pyplot()


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"plot_run.py: {path}: {e}")


def batches(timeline):
    """(start ms, duration us, faults) of every fault batch in a Chrome trace-event file."""
    rows = []
    for e in timeline.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("name") == "fault batch":
            rows.append((float(e["ts"]) / 1e3, float(e["dur"]), e["args"]["faults"]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--timeline")
    args = ap.parse_args()
    doc = load(args.results)
    if "results" not in doc or "config" not in doc:
        sys.exit(f"plot_run.py: {args.results}: not a faultline result (no 'results'/'config')")
    r, cfg = doc["results"], doc["config"]

    panels = 3 if args.timeline else 2
    fig, ax = plt.subplots(1, panels, figsize=(5 * panels, 4.2))
    total = r["total_time_ns"] / 1e6
    compute = r["compute_ns"] / 1e6
    stall = r["fault_stall_ns"] / 1e6
    other = max(total - compute - stall, 0.0)
    ax[0].bar(["time"], [compute], label="compute (all resident)", color="#4c72b0")
    ax[0].bar(["time"], [stall], bottom=[compute], label="fault stall", color="#dd8452")
    ax[0].bar(["time"], [other], bottom=[compute + stall], label="host and gaps", color="#8c8c8c")
    ax[0].set_ylabel("simulated time (ms)")
    ax[0].set_title(f"total {total:.1f} ms, {r['faults']} faults, {r['batches']} batches")
    ax[0].legend(fontsize=8)

    gib = 1 << 30
    names = ["host→GPU", "GPU→host", "populated\non GPU", "prefetch\nused", "prefetch\nwasted"]
    values = [r["bytes_host_to_gpu"], r["bytes_gpu_to_host"], r["bytes_populated_on_gpu"],
              r["prefetch"]["used_bytes"], r["prefetch"]["wasted_bytes"]]
    ax[1].bar(names, [v / gib for v in values], color="#55a868")
    ax[1].set_ylabel("GiB")
    ax[1].set_title(f"{r['evictions']} evictions of 2 MB chunks")
    ax[1].tick_params(axis="x", labelsize=8)

    if args.timeline:
        rows = batches(load(args.timeline))
        if rows:
            sc = ax[2].scatter([b[0] for b in rows], [b[1] for b in rows], c=[b[2] for b in rows],
                               s=6, cmap="viridis")
            fig.colorbar(sc, ax=ax[2], label="faults in batch")
        ax[2].set_xlabel("simulated time (ms)")
        ax[2].set_ylabel("batch service time (µs)")
        ax[2].set_title("fault batches")

    capacity = cfg["capacity"]["resolved_bytes"] / gib
    fig.suptitle(f"{cfg['gpu']['name']}, capacity {capacity:.2f} GiB, policy "
                 f"{cfg['policy']['name']} — {doc['trace']['path']}", fontsize=9)
    fig.tight_layout()
    save_figure(fig, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
