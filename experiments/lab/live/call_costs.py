"""What each run's migration calls cost live: per kind of call (prefetch to the GPU moving pages,
prefetch of pages already held, eviction to the host, discard) the count, the bytes and the CPU's
time inside the calls, from `faultline replay --per-kernel` rows (issue 21, item 3).
    experiments/live/diagnose.py calls RUN.json [RUN.json...] [--json OUT.json]
"""
import argparse
import json
import os

SUMMARY = "per run, each kind of migration call's count, bytes and CPU time"

KINDS = ["to_gpu", "to_gpu_held", "to_host", "discard", "to_peer"]


def summary(path):
    with open(path) as f:
        doc = json.load(f)
    rows = doc.get("kernels")
    if not rows:
        raise SystemExit(f"call_costs: {path}: no per-kernel rows (replay --per-kernel writes them)")
    out = {"run": os.path.basename(path)[: -len(".json")],
           "total_s": doc["results"]["total_time_ns"] / 1e9,
           "kernels": len(rows)}
    for kind in KINDS:
        calls = sum(r.get(kind + "_calls", 0) for r in rows)
        if not calls:
            continue
        out[kind] = {"calls": calls,
                     "bytes": sum(r.get(kind + "_bytes", 0) for r in rows),
                     "cpu_s": sum(r.get(kind + "_cpu_ns", 0) for r in rows) / 1e9}
        out[kind]["cpu_us_per_call"] = round(out[kind]["cpu_s"] * 1e6 / calls, 1)
    return out


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--json", help="also write the summaries here")
    args = ap.parse_args(argv)
    runs = [summary(p) for p in sorted(args.runs)]
    print("| run | time (s) | " + " | ".join(f"{k}: calls, us each" for k in KINDS[:4]) + " |")
    print("|---|---|" + "---|" * 4)
    for r in runs:
        cells = [f"{r[k]['calls']}, {r[k]['cpu_us_per_call']}" if k in r else "" for k in KINDS[:4]]
        print(f"| {r['run']} | {r['total_s']:.2f} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
            f.write("\n")
