"""The README's speed table from the real-trace benchmarks (tests/bench/real_traces.cc): runs
build/tests/faultline_bench on one core (the benchmarks are single-threaded) and prints one row
per trace, millions of accesses a second for each run, and the median over the traces.
    tests/bench/speed_table.py [--bench build/tests/faultline_bench] [--repetitions 3]
        [--json OUT.json]
With repetitions, each cell is the median of its repetitions.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

COLUMNS = [("ondemand", "100"), ("ondemand", "50"), ("deepum", "50"), ("pump", "50"),
           ("oracle", "50")]
TARGETS = {("ondemand", "50"): 30, ("deepum", "50"): 15, ("pump", "50"): 15, ("oracle", "50"): 15,
           "decode": 100}


def run(bench, repetitions, out):
    subprocess.run([bench, "--benchmark_filter=Real|Decode|Steps",
                    f"--benchmark_repetitions={repetitions}",
                    f"--benchmark_out={out}", "--benchmark_out_format=json"],
                   check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def cells(doc):
    """{(kind, trace, policy, capacity): [accesses/s, ...]} over the repetitions."""
    out = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        parts = b["name"].split("/")
        if parts[0] == "Real":
            key = ("real", parts[1], parts[2], parts[3])
        elif parts[0] == "Decode":
            key = ("decode", parts[1], "", "")
        else:  # Steps/dnn/ondemand/50/STEPS
            key = ("steps", parts[4], parts[2], parts[3])
        out.setdefault(key, []).append(b["accesses_per_s"] / 1e6)
    return {k: statistics.median(v) for k, v in out.items()}


def table(c):
    traces = sorted({k[1] for k in c if k[0] == "real"})
    lines = ["| trace | " + " | ".join(f"{p} {cap}%" for p, cap in COLUMNS) + " | decode |",
             "|---|" + "---|" * (len(COLUMNS) + 1)]
    for t in traces:
        row = [c.get(("real", t, p, cap)) for p, cap in COLUMNS] + [c.get(("decode", t, "", ""))]
        lines.append(f"| {t} | " + " | ".join(f"{v:.1f}" if v is not None else "" for v in row)
                     + " |")
    medians = [statistics.median(c[("real", t, p, cap)] for t in traces) for p, cap in COLUMNS]
    medians.append(statistics.median(c[("decode", t, "", "")] for t in traces))
    lines.append("| **median** | " + " | ".join(f"**{v:.1f}**" for v in medians) + " |")
    targets = [TARGETS.get(col) for col in COLUMNS] + [TARGETS["decode"]]
    lines.append("| target (issue 23) | " + " | ".join(f"{t}" if t else "" for t in targets)
                 + " |")
    steps = sorted((int(k[1]), v) for k, v in c.items() if k[0] == "steps")
    if steps:
        lines += ["", "Synthetic DNN trace (1 GiB, 24 layers), ondemand at 50%: " +
                  ", ".join(f"{s} steps {v:.1f} M accesses/s" for s, v in steps) + "."]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build/tests/faultline_bench")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--json", help="keep Google Benchmark's JSON output here")
    args = ap.parse_args()
    if not os.path.exists(args.bench):
        sys.exit(f"speed_table: {args.bench} is missing: build with FAULTLINE_BENCHMARKS=ON "
                 "(./setup.sh does)")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.json or os.path.join(tmp, "bench.json")
        doc = run(args.bench, args.repetitions, out)
    print(table(cells(doc)))


if __name__ == "__main__":
    main()
