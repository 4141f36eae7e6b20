"""The check a trace's timeline must pass: `faultline sim` at a capacity that holds the whole
footprint (ondemand, configs/runs/no-oversubscription.json) against the program's own step time
(the trace's program_step_ns), step by step, steps 2..N of N (default: the captured steps, each
against the same step of the program; --iterations N > that repeats the last, each repetition
against the last step's time).

    python3 experiments/capture/timeline_check.py [--iterations N] [--out REPORT.md] TRACE...

Prints (and writes) a markdown table: per trace, each simulated step beside the program's time,
and the median and largest error over steps 2..N. The committed report:
experiments/capture/reports/timeline.md (experiments/make_reports.sh capture).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def simulate(trace, iterations, binary):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        command = [binary, "sim", "--config",
                   os.path.join(ROOT, "configs/runs/no-oversubscription.json"), "--trace", trace,
                   "--out", out]
        if iterations:
            command += ["--iterations", str(iterations)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out))


def row(trace, result):
    steps = [s for s in result["steps"] if s["step"] >= 0]
    if not all(s.get("program_ns") for s in steps):
        sys.exit(f"{trace}: the trace has no program_step_ns to check against")
    errors = [(s["time_ns"] - s["program_ns"]) / s["program_ns"] * 100 for s in steps[1:]]
    cells = " ".join(f"{s['time_ns'] / 1e6:.1f}/{s['program_ns'] / 1e6:.1f}" for s in steps)
    name = os.path.basename(trace).removesuffix(".fltrace")
    return (f"| {name} | {result['trace']['metadata'].get('gpu', '?')} | {cells} | "
            f"{statistics.median(errors):+.1f}% | {max(errors, key=abs):+.1f}% |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--out")
    ap.add_argument("--binary", default=os.path.join(ROOT, "build/faultline"))
    args = ap.parse_args()
    steps = f"{args.iterations} steps" if args.iterations else "the captured steps"
    lines = [f"Simulated step / the program's step (ms), ondemand at the whole footprint, "
             f"{steps}; error over steps 2..N (`experiments/capture/timeline_check.py`).", "",
             "| trace | captured on | steps 1..N (ms) | median error | largest error |",
             "|---|---|---|---|---|"]
    for trace in args.traces:
        lines.append(row(trace, simulate(trace, args.iterations, args.binary)))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        open(args.out, "w").write(text)


if __name__ == "__main__":
    main()
