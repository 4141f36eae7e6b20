"""Kernel by kernel, the program against the simulator: each `faultline run --per-kernel` result of
a `campaign.sh program` campaign (PROGRAM-POLICY-BUDGET.kernels.json, or .kernels.json.gz where
committed compressed: every operation's GPU time, and with --um-counters CUPTI's fault groups
during it) beside the simulator's per_kernel rows of the same trace, policy and budget, with the
instance's quick calibration.

    experiments/live/fidelity.py kernels [CAMPAIGN] [--write-reports] [--faultline BIN]

The rows line up by index (the run counts operations as the trace does: launches, and copies
and memsets of at least one byte); where the counts differ the result says so and is left out.
For each operation the stall is its time beyond the trace's all-resident duration (the
program's: GPU time less compute_ns; the simulator's stall_ns). Summed by kind of kernel (GEMM,
convolution, attention, elementwise, reduction, gather, copy, other) and by kernel name, with the
faults on each side (CUPTI's fault groups in the program, fault-buffer entries in the simulator:
counts of different things, their ratio is what to watch across kinds).
Writes kernels.md and kernels.json into live/reports/CAMPAIGN/ (with --write-reports; else
out/live/CAMPAIGN/)."""
import argparse
import glob
import os
import re

from lab import campaigns, sim, tables
from lab.live import program
from lab.paths import EXPERIMENTS, FAULTLINE, REPO

SUMMARY = "a program campaign's --per-kernel runs against the simulator, kernel by kernel"

KINDS = [("copy", r"^\[mem"), ("attention", r"flash|fmha|attention|sdpa"),
         ("gemm", r"gemm|cutlass|xmma|cublas|matmul|sm90_"), ("convolution", r"conv|cudnn|implicit"),
         ("gather", r"embedding|index|gather|scatter|bag"), ("reduction", r"reduce|norm|softmax|sum"),
         ("elementwise", r"elementwise|vectorized|unrolled|copy_kernel|fill|where|launch_kernel")]


def kind_of(name):
    """The kind of a kernel, from words in its (demangled or mangled) name."""
    lower = name.lower()
    for kind, pattern in KINDS:
        if re.search(pattern, lower):
            return kind
    return "other"


def short(name, width=70):
    """A kernel's name without its template arguments and parameter list, cut to width."""
    name = re.sub(r"<.*>", "<>", name.split("(")[0] if not name.startswith("[") else name)
    return name if len(name) <= width else name[:width - 3] + "..."


def simulate_rows(trace, run, profile, faultline):
    """The simulator's per_kernel rows for RUN's trace, policy and budget."""
    config = program.run_config(run["config"]["policy"]["name"],
                                run["config"]["budget"]["fraction_of_footprint"] or 1.0, profile,
                                program.decision_ns([run]))
    return sim.simulate(trace, config, faultline, per_kernel=True)["kernels"]


def compare(run, rows):
    """Per operation: (sim row, program row) with the program's stall, for rows both have."""
    program = run.get("kernels", [])
    if len(program) != len(rows):
        return None
    out = []
    for s, p in zip(rows, program):
        if p.get("gpu_ns") is None:
            continue
        out.append({"name": s["name"], "kind": kind_of(s["name"]), "compute_ns": s["compute_ns"],
                    "program_gpu_ns": p["gpu_ns"],
                    "program_stall_ns": max(0, p["gpu_ns"] - s["compute_ns"]),
                    "sim_gpu_ns": s["compute_ns"] + s["stall_ns"], "sim_stall_ns": s["stall_ns"],
                    "program_faults": p.get("gpu_faults"), "sim_faults": s.get("faults", 0),
                    "program_bytes_to_gpu": p.get("bytes_host_to_gpu")})
    return out


def summed(pairs, key):
    groups = {}
    for r in pairs:
        g = groups.setdefault(r[key], {key: r[key], "operations": 0, "compute_ns": 0,
                                       "program_stall_ns": 0, "sim_stall_ns": 0,
                                       "program_faults": 0, "sim_faults": 0})
        g["operations"] += 1
        for k in ("compute_ns", "program_stall_ns", "sim_stall_ns", "program_faults",
                  "sim_faults"):
            g[k] = None if g[k] is None or r[k] is None else g[k] + r[k]
    for g in groups.values():
        g["stall_ratio"] = (round(g["sim_stall_ns"] / g["program_stall_ns"], 3)
                            if g["program_stall_ns"] else None)
    return sorted(groups.values(), key=lambda g: -max(g["program_stall_ns"], g["sim_stall_ns"]))


def per_kernel_runs(folder):
    """The campaign's `faultline run --per-kernel` results, plain or gzip-compressed, in name
    order."""
    return sorted(glob.glob(os.path.join(folder, "*.kernels.json")) +
                  glob.glob(os.path.join(folder, "*.kernels.json.gz")))


def report(folder, faultline):
    with open(os.path.join(folder, "profile.txt")) as f:
        profile = os.path.join(folder, "profile", "gpus", f.read().strip() + ".json")
    out = []
    for path in per_kernel_runs(folder):
        run = campaigns.read_json(path, "kernels")
        name = os.path.basename(path).split(".kernels.json")[0]
        program = name.split("-")[0]
        trace = os.path.join(folder, program + ".fltrace")
        rows = simulate_rows(trace, run, profile, faultline)
        pairs = compare(run, rows)
        entry = {"run": name, "program": program, "policy": run["config"]["policy"]["name"],
                 "budget": run["config"]["budget"]["fraction_of_footprint"],
                 "program_operations": len(run.get("kernels", [])), "sim_operations": len(rows)}
        if pairs is None:
            entry["aligned"] = False
            out.append(entry)
            continue
        entry["aligned"] = True
        entry["timed_operations"] = len(pairs)
        # Runs without --um-counters have no fault counts: null, not zero.
        total = {k: None if any(r[k] is None for r in pairs) else sum(r[k] for r in pairs)
                 for k in ("compute_ns", "program_stall_ns", "sim_stall_ns", "program_faults",
                           "sim_faults", "program_gpu_ns", "sim_gpu_ns")}
        entry["total"] = total
        entry["by_kind"] = summed(pairs, "kind")
        entry["by_kernel"] = summed([dict(r, name=short(r["name"])) for r in pairs], "name")[:15]
        out.append(entry)
    return {"campaign": os.path.relpath(folder, REPO), "runs": out}


def ms(ns):
    return f"{ns / 1e6:.1f}"


def markdown(doc, command):
    lines = [f"# Kernel by kernel: {os.path.basename(doc['campaign'])}", "",
             f"Made by `{command}`: each `faultline run --per-kernel` result beside the "
             "simulator's per_kernel rows of the same trace, policy and budget, with the "
             "instance's quick calibration. Stall: time beyond the trace's all-resident duration "
             "(program: GPU time less it). Faults: CUPTI's fault groups in the program, "
             "fault-buffer entries in the simulator.", ""]
    for e in doc["runs"]:
        lines += [f"## {e['run']}", ""]
        if not e["aligned"]:
            lines += [f"Not aligned: the program ran {e['program_operations']} operations, the "
                      f"trace holds {e['sim_operations']}.", ""]
            continue
        t = e["total"]
        lines += [f"{e['timed_operations']} operations timed: compute {ms(t['compute_ns'])} ms; "
                  f"stall in the program {ms(t['program_stall_ns'])} ms, in the simulator "
                  f"{ms(t['sim_stall_ns'])} ms; faults "
                  + (f"{t['program_faults']} (program) and " if t["program_faults"] is not None
                     else "not counted in the program (no --um-counters), ")
                  + f"{t['sim_faults']} (simulator).", ""]
        for key, title in (("by_kind", "kind"), ("by_kernel", "kernel")):
            lines += tables.markdown_table(
                [title, "operations", "compute (ms)", "program stall (ms)", "sim stall (ms)",
                 "sim / program", "program faults", "sim faults"],
                [[g[key[3:] if key == "by_kind" else "name"], g["operations"],
                  ms(g["compute_ns"]), ms(g["program_stall_ns"]), ms(g["sim_stall_ns"]),
                  g["stall_ratio"], g["program_faults"], g["sim_faults"]]
                 for g in e[key]])
            lines.append("")
    return lines


def main(argv=None, prog=None):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("campaign", help="a folder under live/data/ with *.kernels.json")
    parser.add_argument("--write-reports", action="store_true",
                        help="write into live/reports/CAMPAIGN/ (default out/live/CAMPAIGN/)")
    parser.add_argument("--faultline", default=FAULTLINE, help="the faultline binary")
    args = parser.parse_args(argv)
    folder = os.path.join(EXPERIMENTS, "live", "data", args.campaign)
    if not per_kernel_runs(folder):
        raise SystemExit(f"kernels: {folder}: no *.kernels.json (campaign.sh program with "
                         "PER_KERNEL_POLICIES)")
    doc = report(folder, args.faultline)
    out = program.write_report(args.campaign, "kernels", doc, markdown, args.write_reports)
    print(f"kernels: {len(doc['runs'])} runs; written to {out}")
    return 0
