"""The fault path's cost per block for the probe's page patterns, live against the simulator:
the fault_shape probe's steps and fill lines (experiments/live/probes/fault_shape.cc) of a data
folder, each case simulated from a `faultline synth --pattern pages` trace of the same pages
(1024 host-written blocks, the held pages brought in by a kernel first), into CASES.md and
CASES.json of the output folder (issue 21: the strided trace's later kernels).
    experiments/live/diagnose.py fault-cases DATA OUT [--gpu configs/gpus/h200.json] [--faultline build/faultline]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

import lab.sim

SUMMARY = "the fault_shape probe's cases, live against simulated per block"

BLOCKS = 1024
FILL = re.compile(r"blocks\s+(\d+)\s+origin (\w+)\s+touch (\d+)\+(\d+)(?:x(\d+))?\s+held (\d+)\+(\d+)"
                  r"\s+\S+ ms\s+(\S+) us a block.*?\)\s+(.*)$")
STEPS = re.compile(r"blocks\s+(\d+)\s+step\s+(\d+)\s+pages/block\s+\d+\s+origin (\w+)\s+order (\w+)"
                   r"\s+\S+ ms\s+(\S+) us a block")


def live_cases(data):
    """{(touch first, step, width, held first, held step): {"what", "live": {file: us}}}, host
    origin, block order, 1024 blocks."""
    cases = {}
    for name in sorted(os.listdir(data)):
        if not (name.startswith("fault_") and name.endswith(f"_{BLOCKS}.txt")):
            continue
        with open(os.path.join(data, name)) as f:
            for line in f:
                fill, steps = FILL.match(line.strip()), STEPS.match(line.strip())
                if fill and fill.group(2) == "host" and int(fill.group(1)) == BLOCKS:
                    key = tuple(int(fill.group(i) or 1) for i in (3, 4, 5, 6, 7))
                    what, us = fill.group(9), float(fill.group(8))
                elif steps and steps.group(3) == "host" and steps.group(4) == "block":
                    step = int(steps.group(2))
                    pages = (32 + step - 1) // step
                    key = (0, step, 1, 0, 0)
                    what = ("1 fault" if pages == 1 else f"{pages} faults, {pages} runs") if step > 1 \
                        else "32 faults, one run"
                    us = float(steps.group(5))
                else:
                    continue
                case = cases.setdefault(key, {"what": what, "live": {}})
                case["live"][name[: -len(".txt")]] = us
    if not cases:
        raise SystemExit(f"fault_cases: {data}: no fault_shape steps or fill lines of {BLOCKS} blocks")
    return cases


def simulate(key, gpu, faultline, tmp):
    tf, ts, tw, hf, hs = key
    trace = os.path.join(tmp, "case.fltrace")
    subprocess.run([faultline, "synth", "--pattern", "pages", "--footprint", str(BLOCKS * 2 << 20),
                    "--touch-first", str(tf), "--touch-step", str(ts), "--touch-width", str(tw),
                    "--held-first", str(hf), "--held-step", str(hs), "--out", trace],
                   check=True, capture_output=True)
    config = {"description": "fault_cases: one probe case", "gpu": os.path.abspath(gpu),
              "capacity": {"fraction_of_footprint": 1.0}, "policy": {"name": "ondemand"},
              "per_kernel": True}
    doc = lab.sim.simulate(trace, config, faultline)
    k = doc["kernels"][-1]
    return (k["end_ns"] - k["start_ns"]) / 1e3 / BLOCKS, doc["faultline"]["git_revision"]


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("data")
    ap.add_argument("out")
    ap.add_argument("--gpu", default="configs/gpus/h200.json")
    ap.add_argument("--faultline", default="build/faultline")
    args = ap.parse_args(argv)
    cases = live_cases(args.data)
    files = sorted({f for c in cases.values() for f in c["live"]})
    rows, revision = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for key in sorted(cases, key=lambda k: (k[4] != 0, k)):
            sim, revision = simulate(key, args.gpu, args.faultline, tmp)
            live = cases[key]["live"]
            med = statistics.median(live.values())
            rows.append({"touch": "%d+%dx%d" % key[:3], "held": "%d+%d" % key[3:] if key[4] else "none",
                         "what": cases[key]["what"], "live_us": live, "live_median_us": med,
                         "sim_us": round(sim, 1), "sim_over_live": round(sim / med, 2)})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cases.json"), "w") as f:
        json.dump({"data": args.data, "gpu": args.gpu, "blocks": BLOCKS, "git_revision": revision,
                   "rows": rows}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(args.out, "cases.md"), "w") as f:
        f.write(f"Fault path per block, {BLOCKS} host-written blocks, block order: live "
                f"(`{args.data}`) against the simulator at {revision} with `{args.gpu}`. "
                "Touch F+SxW: W pages from page F, every S pages; held: pages the GPU holds "
                "before (brought in by a kernel). Written by `experiments/live/diagnose.py fault-cases`.\n\n")
        f.write("| touch | held | case | " + " | ".join(files) + " | live median | simulated | sim/live |\n")
        f.write("|---|---|---|" + "---|" * len(files) + "---|---|---|\n")
        for r in rows:
            cells = " | ".join(f"{r['live_us'][n]:.0f}" if n in r["live_us"] else "" for n in files)
            f.write(f"| {r['touch']} | {r['held']} | {r['what']} | {cells} | "
                    f"{r['live_median_us']:.0f} | {r['sim_us']:.0f} | {r['sim_over_live']:.2f} |\n")
    print(open(os.path.join(args.out, "cases.md")).read())
