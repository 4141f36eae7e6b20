"""Which simulated cost a miss lies in: each kernel's simulated time split into the budget's
evictions before it (E: launched_ns to start_ns), its stall once started (F: faults and the
copies they wait for) and its recorded compute (C); then, per bucket of kernels by their
simulated faults, the least-squares fit of the live rows' times as a*E + b*F + c*C over every
kernel of the runs given. a = b = c = 1 where the simulator prices each part as the GPU pays it;
b = 0.5 says the GPU stalled half as long as simulated on such kernels' faults.
    experiments/live/diagnose.py stall-split --gpu PROFILE [--shipped MODEL] RUN [RUN...]
RUN: LIVE.json:TRACE:POLICY:BUDGET (a `replay --per-kernel` result, the trace it replayed).
PROFILE: a GPU profile's name, or the path of a calibrated one (its host link beside it); with
--shipped, a per-machine calibration is refitted with MODEL's fault path as fidelity.py does.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np

from lab.live.fault_cost_by_kernel import simulate
from lab.live.fidelity import with_shipped_fault_path

SUMMARY = (
    "each simulated kernel split into evictions, stall and compute, the live times fitted as a "
    "mix of the three")

BUCKETS = [(0, 64), (64, 512), (512, float("inf"))]


def parts(live_path, trace, policy, budget, gpu, faultline):
    """(E, F, C, live time, simulated faults) of every kernel of one run, and the simulator's
    revision."""
    with open(live_path) as f:
        live = json.load(f)["kernels"]
    doc = simulate(faultline, trace, policy, float(budget), gpu)
    sim = doc["kernels"]
    if len(live) != len(sim):
        sys.exit(f"stall_split: {live_path} has {len(live)} kernel rows, the simulation {len(sim)}")
    return [(s["start_ns"] - s["launched_ns"], s["end_ns"] - s["start_ns"] - s["compute_ns"],
             s["compute_ns"], g["end_ns"] - g["start_ns"], s["faults"])
            for g, s in zip(live, sim)], doc["faultline"]["git_revision"]


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("runs", nargs="+", help="LIVE.json:TRACE:POLICY:BUDGET")
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--shipped", help="the GPU model's shipped profile, for a per-machine one")
    ap.add_argument("--faultline", default="build/faultline")
    args = ap.parse_args(argv)
    named, refitted = args.gpu, False
    scratch = tempfile.TemporaryDirectory()
    if args.shipped and args.gpu.endswith(".json"):
        args.gpu, refitted = with_shipped_fault_path(os.path.abspath(args.gpu), args.shipped,
                                                     scratch.name, args.faultline)
    rows, revisions = [], set()
    for run in args.runs:
        fields = run.split(":")
        if len(fields) != 4:
            sys.exit(f"stall_split: {run}: expected LIVE.json:TRACE:POLICY:BUDGET")
        kernels, revision = parts(*fields, args.gpu, args.faultline)
        rows += kernels
        revisions.add(revision)
    a = np.array(rows, dtype=float)
    print("| faults a kernel | kernels | E (s) | F (s) | C (s) | GPU (s) | sim (s) | a | b | c |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for lo, hi in BUCKETS:
        sel = a[(a[:, 4] >= lo) & (a[:, 4] < hi)]
        if len(sel) < 3:
            continue
        coef = np.linalg.lstsq(sel[:, :3], sel[:, 3], rcond=None)[0]
        e, f, c, gpu = (sel[:, i].sum() / 1e9 for i in range(4))
        print(f"| {lo}-{'' if hi == float('inf') else hi - 1} | {len(sel)} | {e:.2f} | {f:.2f} "
              f"| {c:.2f} | {gpu:.2f} | {e + f + c:.2f} | {coef[0]:.2f} | {coef[1]:.2f} "
              f"| {coef[2]:.2f} |")
    how = f", refitted with {args.shipped}'s fault path" if refitted else ""
    print(f"\nSimulated by faultline {', '.join(sorted(revisions))} with {named}{how}.")
