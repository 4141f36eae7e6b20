"""GMLake's evaluation, its shape, from the allocation traces captured on the H200 (traces/alloc/,
by the alloc captures), and the link to the UM simulation (`experiments/alloc/study.py
[--write-reports]`):
1. every trace through the caching, expandable and GMLake models (configs/alloc/default.json);
2. the batch traces of GPT-2 large with recompute under 16 GiB (configs/alloc/limit-16g.json):
   the largest batch each model fits, beside the live measurement;
3. the shipped UM traces re-placed by each model (faultline alloc relayout) and simulated at
   one capacity: what a defragmenting allocator changes in faults and migrated bytes;
then the tables and figures (figures.py) in out/alloc/reports/, or with --write-reports in
experiments/alloc/reports/.
"""
import argparse
import glob
import os
import re

from lab import steps
from lab.alloc import figures, um_config

UM_TRACES = ["gpt2-small", "bert-large", "gpt2-medium"]
ALLOCATORS = ["caching", "expandable", "gmlake"]
UM_CAPACITY = 0.5  # of each original trace's footprint
# The batch series (gpt2-large-recompute-bN) only feeds step 2; its batch 8 is also a run of the
# capture matrix, so it goes through step 1 as well.
BATCH_SERIES = re.compile(r"gpt2-large-recompute-b")
BATCH_ONLY = re.compile(r"gpt2-large-recompute-b[4-79]")


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description="The allocator study: every allocation "
                                 "trace through the allocator models, the largest batch under "
                                 "16 GiB, the UM link; then its tables and figures.")
    ap.add_argument("--write-reports", action="store_true",
                    help="the tables and figures into experiments/alloc/reports/, not out/")
    args = ap.parse_args(argv)
    steps.in_repository("study")
    out = "out/alloc"
    reports = "experiments/alloc/reports" if args.write_reports else f"{out}/reports"
    for folder in ("sim", "limit", "um"):
        os.makedirs(f"{out}/{folder}", exist_ok=True)
    for t in sorted(glob.glob("traces/alloc/*.pickle.zst")):
        name = os.path.basename(t)[:-len(".pickle.zst")]
        if not BATCH_ONLY.fullmatch(name):
            steps.faultline("alloc", "run", "--history", t, "--out", f"{out}/sim/{name}.json")
        if BATCH_SERIES.match(name):
            steps.faultline("alloc", "run", "--history", t,
                            "--config", "configs/alloc/limit-16g.json",
                            "--out", f"{out}/limit/{name}.json")
    for trace in UM_TRACES:
        # One capacity in bytes for the trace and each of its re-placed copies.
        um_config.write(f"traces/real/{trace}.fltrace", UM_CAPACITY,
                        f"{out}/um/{trace}.config.json")
        for a in ALLOCATORS:
            steps.faultline("alloc", "relayout", "--trace", f"traces/real/{trace}.fltrace",
                            "--allocator", a, "--out", f"{out}/um/{trace}-{a}.fltrace",
                            "--stats", f"{out}/um/{trace}-{a}.relayout.json")
            steps.faultline("sim", "--config", f"{out}/um/{trace}.config.json",
                            "--trace", f"{out}/um/{trace}-{a}.fltrace",
                            "--out", f"{out}/um/{trace}-{a}.sim.json", "--no-progress")
    return figures.main([out, "experiments/alloc/data", reports])
