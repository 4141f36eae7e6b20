"""Fault cost by kernel size, GPU against simulator: per-kernel replays (`faultline replay
--per-kernel`, one or more repeats of one run) and the simulation of the same run, kernels
bucketed by the faults the simulator gives them; per bucket the time of its kernels on both and
the time per fault.
    fault_cost_by_kernel.py --trace T --policy P --budget B --gpu PROFILE LIVE.json [LIVE.json...]
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

BUCKETS = [(0, 1), (1, 64), (64, 512), (512, 2048), (2048, float("inf"))]


def simulate(faultline, trace, policy, budget, gpu):
    config = {"gpu": gpu, "policy": {"name": policy, "params": {}},
              "capacity": {"fraction_of_footprint": budget, "mode": "budget"}, "per_kernel": True}
    return common.simulate(trace, config, faultline)["kernels"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("live", nargs="+")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--policy", default="ondemand")
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--gpu", default="h200")
    ap.add_argument("--faultline", default="build/faultline")
    args = ap.parse_args()
    runs = [json.load(open(p))["kernels"] for p in args.live]
    sim = simulate(args.faultline, args.trace, args.policy, args.budget, args.gpu)
    if any(len(r) != len(sim) for r in runs):
        sys.exit("fault_cost_by_kernel: the live runs and the simulation differ in kernel count")
    print("| faults a kernel | kernels | faults | GPU (s) | sim (s) | error | us a fault GPU / sim |")
    print("|---|---|---|---|---|---|---|")
    for lo, hi in BUCKETS:
        rows = [i for i, k in enumerate(sim) if lo <= k["faults"] < hi]
        live = sum(statistics.median(r[i]["gpu_ns"] for r in runs) for i in rows)
        simulated = sum(sim[i]["end_ns"] - sim[i]["start_ns"] for i in rows)
        faults = sum(sim[i]["faults"] for i in rows)
        per_fault = (f"{live / faults / 1e3:.1f} / {simulated / faults / 1e3:.1f}" if faults
                     else "")
        print(f"| {lo}-{hi - 1 if hi != float('inf') else ''} | {len(rows)} | {faults} "
              f"| {live / 1e9:.3f} | {simulated / 1e9:.3f} "
              f"| {(simulated - live) / live if live else 0:+.0%} | {per_fault} |")


if __name__ == "__main__":
    main()
