"""Fault cost by kernel size, GPU against simulator: per-kernel replays (`faultline replay
--per-kernel`, one or more repeats of one run) and the simulation of the same run, kernels
bucketed by the faults the simulator gives them; per bucket the time of its kernels on both and
the time per fault; last, the time outside kernels (the trace's host work and waits, the
replay's own), which is where a miss lies that no bucket shows. A kernel's time runs from when
the host asked for it to its end: the budget's evictions that make room for it are its own, in
the live rows as in the simulated ones (`launched_ns`).
    experiments/live/diagnose.py kernels --trace T --policy P --budget B --gpu PROFILE LIVE.json [LIVE.json...]
PROFILE: a GPU profile's name, or the path of a calibrated one (its host link beside it).
"""
import argparse
import json
import os
import statistics
import sys

import lab.sim
from lab.live.fidelity import profile_keys

SUMMARY = "per-kernel replays against the simulation of the same run, kernels bucketed by their faults"

BUCKETS = [(0, 1), (1, 64), (64, 512), (512, 2048), (2048, float("inf"))]


def span(row):
    """A simulated kernel's time from the host's request (before the budget's evictions for it,
    where a live row starts) to its end."""
    return row["end_ns"] - row.get("launched_ns", row["start_ns"])


def simulate(faultline, trace, policy, budget, gpu):
    """The simulated run's result document, with its per-kernel rows."""
    machine = {k: os.path.abspath(v) if v.endswith(".json") else v
               for k, v in profile_keys(gpu).items()}
    config = {**machine, "policy": {"name": policy, "params": {}},
              "capacity": {"fraction_of_footprint": budget, "mode": "budget"}, "per_kernel": True}
    return lab.sim.simulate(trace, config, faultline)


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("live", nargs="+")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--policy", default="ondemand")
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--faultline", default="build/faultline")
    args = ap.parse_args(argv)
    docs = [json.load(open(p)) for p in args.live]
    runs = [d["kernels"] for d in docs]
    doc = simulate(args.faultline, args.trace, args.policy, args.budget, args.gpu)
    sim, sim_total = doc["kernels"], doc["results"]["total_time_ns"]
    if any(len(r) != len(sim) for r in runs):
        sys.exit("fault_cost_by_kernel: the live runs and the simulation differ in kernel count")
    print("| faults a kernel | kernels | faults | GPU (s) | sim (s) | error | us a fault GPU / sim |")
    print("|---|---|---|---|---|---|---|")
    for lo, hi in BUCKETS:
        rows = [i for i, k in enumerate(sim) if lo <= k["faults"] < hi]
        live = sum(statistics.median(r[i]["gpu_ns"] for r in runs) for i in rows)
        simulated = sum(span(sim[i]) for i in rows)
        faults = sum(sim[i]["faults"] for i in rows)
        per_fault = (f"{live / faults / 1e3:.1f} / {simulated / faults / 1e3:.1f}" if faults
                     else "")
        print(f"| {lo}-{hi - 1 if hi != float('inf') else ''} | {len(rows)} | {faults} "
              f"| {live / 1e9:.3f} | {simulated / 1e9:.3f} "
              f"| {(simulated - live) / live if live else 0:+.0%} | {per_fault} |")
    live_total = statistics.median(d["results"]["total_time_ns"] for d in docs)
    live_kernels = sum(statistics.median(r[i]["gpu_ns"] for r in runs) for i in range(len(sim)))
    sim_kernels = sum(span(k) for k in sim)
    live_out, sim_out = live_total - live_kernels, sim_total - sim_kernels
    print(f"| outside kernels | | | {live_out / 1e9:.3f} | {sim_out / 1e9:.3f} "
          f"| {(sim_out - live_out) / live_out if live_out else 0:+.0%} | |")
    print(f"| the run | {len(sim)} | | {live_total / 1e9:.3f} | {sim_total / 1e9:.3f} "
          f"| {(sim_total - live_total) / live_total:+.0%} | |")
