"""The check a trace's timeline must pass: `faultline sim` at a capacity that holds the whole
footprint (ondemand, configs/runs/no-oversubscription.json) against the program's own step time
(the trace's program_step_ns, from the capture's program pass), step by step, steps 2..N of N
(default: the captured steps, each against the same step of the program; --iterations N > that
repeats the last, each repetition against the last step's time).

    experiments/capture/check.py timeline [--iterations N] [--runs DIR]... [--out REPORT.md] TRACE...

--gaps adds a table of the GPU's own gaps between kernels that were issued before the previous one
ended (from one's end to the next's start, steps 2..N): time the program's GPU spent between
queued kernels, which the simulator does not model (it starts such a kernel at the previous
one's end), so an upper bound on what that costs the simulated step.

--runs names folders of `experiments/campaign.sh capture`: the plain run of each trace's workload (NAME.runs.jsonl,
mode "plain", the program alone, nothing attached) joins the table, its steps 2..N beside the
simulated ones: how far the capture's program pass (or, in traces without one, its timing pass),
and so the trace, is from the program alone.

Prints (and writes) a markdown table: per trace, each simulated step beside the program's time,
the median and largest error over steps 2..N, and the median over the steady ones among them: the
steps with no fault. At the whole footprint nothing is evicted, so a fault is a first touch of a
page that a plain program populates without one (its memory is not managed) and that the
timing pass prefetched when the allocation was first named. The committed report:
experiments/capture/reports/timeline.md (experiments/make_reports.sh capture).
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile

from lab.paths import FAULTLINE, REPO

SUMMARY = "each trace simulated at its whole footprint against the program's own steps"


def simulate(trace, iterations, binary):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        command = [binary, "sim", "--config",
                   os.path.join(REPO, "configs/runs/no-oversubscription.json"), "--trace", trace,
                   "--out", out]
        if iterations:
            command += ["--iterations", str(iterations)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        return json.load(open(out))


def gpu_gaps(trace, binary):
    """Gaps (ns) between the end of a kernel and the start of the next, where the next was issued
    before that end, over steps 2..N; and the program's time over those steps (ns)."""
    dump = subprocess.Popen([binary, "trace", "dump", trace], stdout=subprocess.PIPE, text=True)
    gaps, begin, program, prev_end = [], None, 0, None
    for line in dump.stdout:
        if begin is None:
            meta = json.loads(line)["metadata"]
            if len(meta.get("steps", [])) < 2:
                sys.exit(f"{trace}: fewer than two steps")
            begin = meta["steps"][1]["start_ns"]
            program = sum(meta["program_step_ns"][1:])
            continue
        if '"type":"kernel"' not in line:
            continue
        k = json.loads(line)
        start = k["time"] + k["queued"]
        if prev_end is not None and k["time"] < prev_end and k["time"] >= begin:
            gaps.append(start - prev_end)
        prev_end = start + k["duration"]
    if dump.wait() != 0:
        sys.exit(f"{trace}: faultline trace dump failed")
    return gaps, program


def gaps_row(trace, binary):
    gaps, program = gpu_gaps(trace, binary)
    name = os.path.basename(trace).removesuffix(".fltrace")
    if not gaps:
        return f"| {name} | 0 | | | 0 | 0% |"
    gaps.sort()
    return (f"| {name} | {len(gaps)} | {statistics.median(gaps) / 1e3:.2f} | "
            f"{gaps[int(0.9 * (len(gaps) - 1))] / 1e3:.2f} | {sum(gaps) / 1e6:.2f} | "
            f"{sum(gaps) / program * 100:.1f}% |")


def plain_steps(name, folders):
    """The plain run's own step times (s) of the workload behind trace NAME, or None."""
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "**", "*.runs.jsonl"), recursive=True)):
            for line in open(path):
                run = json.loads(line)
                program = run.get("program") or {}
                if run["mode"] == "plain" and name in (run["workload"], program.get("workload")) \
                        and program.get("step_seconds"):
                    return program["step_seconds"]
    return None


def row(trace, result, folders):
    steps = [s for s in result["steps"] if s["step"] >= 0]
    if not all(s.get("program_ns") for s in steps):
        sys.exit(f"{trace}: the trace has no program_step_ns to check against")
    if len(steps) < 2:
        sys.exit(f"{trace}: one step only; the check needs steps 2..N (try --iterations 3)")
    def error(s):
        return (s["time_ns"] - s["program_ns"]) / s["program_ns"] * 100

    errors = [error(s) for s in steps[1:]]
    steady = [error(s) for s in steps[1:] if s["faults"] == 0]
    cells = " ".join(f"{s['time_ns'] / 1e6:.1f}/{s['program_ns'] / 1e6:.1f}"
                     + ("*" if s["faults"] else "") for s in steps)
    name = os.path.basename(trace).removesuffix(".fltrace")
    label = name + (" (hold-out)" if "holdout" in trace.split(os.sep) else "")
    line = (f"| {label} | {result['trace']['metadata'].get('gpu', '?')} | {cells} | "
            f"{statistics.median(errors):+.1f}% | {max(errors, key=abs):+.1f}% | "
            + (f"{statistics.median(steady):+.1f}% ({len(steady)})" if steady else "none") + " |")
    if folders:
        plain = plain_steps(name, folders)
        if plain and len(plain) == len(steps):
            # Over the steady steps where there are some: first touches are the UM run's own.
            at = [i for i, s in enumerate(steps) if i and s["faults"] == 0] or range(1, len(steps))
            simulated = statistics.median(steps[i]["time_ns"] for i in at) / 1e6
            alone = statistics.median(plain[i] for i in at) * 1e3
            line += (f" {' '.join(f'{t * 1e3:.1f}' for t in plain[1:])} | "
                     f"{(simulated - alone) / alone * 100:+.1f}% |")
        else:
            line += " | |"
    return line


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--iterations", type=int, default=0)
    ap.add_argument("--runs", action="append", default=[], metavar="DIR")
    ap.add_argument("--gaps", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--binary", default=FAULTLINE)
    args = ap.parse_args(argv)
    steps = f"{args.iterations} steps" if args.iterations else "the captured steps"
    lines = [f"Simulated step / the program's step (ms), ondemand at the whole footprint, "
             f"{steps}; error over steps 2..N, and over the steady ones among them (no fault; "
             f"\\* marks a step with first touches, which fault in the simulated UM run and not "
             f"in the program) (`experiments/capture/check.py timeline`).", "",
             "| trace | captured on | steps 1..N (ms) | median error | largest error "
             "| steady steps: median error (how many) |"
             + (" program alone, steps 2..N (ms) | simulated against it (medians) |"
                if args.runs else ""),
             "|---|---|---|---|---|---|" + ("---|---|" if args.runs else "")]
    for trace in args.traces:
        lines.append(row(trace, simulate(trace, args.iterations, args.binary), args.runs))
    if args.gaps:
        lines += ["", "The GPU's gaps between queued kernels, steps 2..N: from a kernel's end to the "
                  "start of the next, issued before that end (the simulator starts it at the end).",
                  "", "| trace | queued kernels | median gap (µs) | p90 (µs) | sum (ms) "
                  "| sum / the program's steps |", "|---|---|---|---|---|---|"]
        lines += [gaps_row(trace, args.binary) for trace in args.traces]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        open(args.out, "w").write(text)

