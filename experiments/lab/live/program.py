"""The program as the ground truth: a campaign of `experiments/campaign.sh program` (policies run
inside the real programs with `faultline run`, beside the same programs captured and replayed)
against the simulator and the replay.

    experiments/live/fidelity.py program [CAMPAIGN] [--write-reports] [--faultline BIN]

For each program, policy and budget: the program's time (the run's measured steps, as many as
the capture's `measured_steps`, but the last, which in the trace holds the program's tear-down
after its loop and in the run's rows does not; the median of the repeats), the replay's and the
simulator's over the same steps of the
captured trace (the simulator in capacity mode "program", the budget as `faultline run` keeps it,
with the instance's own quick calibration, and the CPU time the policy's decisions took at each
launch in the program as `policy_launch_ns`), their errors against the program, and each
policy's speedup over ondemand in the program. Also what `faultline run` costs the program: the
program's own step time under `faultline run --policy ondemand` with no budget against the
program alone.
Writes program.md, program.json and program.png into live/reports/CAMPAIGN/ (with
--write-reports; else out/live/CAMPAIGN/)."""
import argparse
import glob
import json
import os
import re
import subprocess
import tempfile

from lab import sim, tables
from lab.campaigns import median, refusals
from lab.live.fidelity import filled_profile, profile_keys
from lab.paths import EXPERIMENTS, FAULTLINE, REPO

SUMMARY = "a `campaign.sh program` campaign: the simulator and the replay against the program"

POLICIES = ["ondemand", "schedule", "pump", "deepum", "oracle"]
BUDGETS = ["1.0", "0.75", "0.5"]


STEPS = 10  # the measured steps where the capture does not say (campaign.sh program's STEPS)
# Runs with fewer faults than this in their measured steps have no cost a fault in the report:
# their rest is the CPU and the kernels, not the fault path.
FAULTS_FOR_COST = 100_000


def measured_ns(doc, steps=STEPS, key="time_ns"):
    """The time of a result's last STEPS steps but the very last (numbered from 0: the set-up
    before the first step mark is step -1 in the run and the trace alike, and a program whose
    first step is its warm-up has one step more), in ns; None when the result has fewer. The last
    step is left out on both sides: in the trace it runs to the program's end, its frees
    included (tiles: 440 ms of cudaFree), in the run's rows it ends before them. KEY: the steps'
    field summed (None where a row lacks it)."""
    rows = [s for s in doc.get("steps", []) if s.get("step", -1) >= 0]
    if len(rows) > steps and rows[-1].get("kernels") == 1:
        rows.pop()  # h100-91f89b91-program's runs: a final loss.item() made a step of its own
    rows = rows[-steps:]
    if len(rows) != steps or any(key not in s for s in rows[:-1]):
        return None
    return sum(s[key] for s in rows[:-1])


def trace_header(trace, faultline):
    with subprocess.Popen([faultline, "trace", "dump", trace], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as p:
        header = json.loads(p.stdout.readline() or "{}")
        p.kill()
    return header


def measured_steps(trace, faultline):
    """(STEPS, SPAN): the measured steps the capture recorded (`--meta measured_steps=N`, else
    STEPS), and the trace's steps (FIRST, LAST) that measured_ns times in a run of the same
    steps, the last STEPS but the very last (None for a trace of fewer than two steps)."""
    metadata = trace_header(trace, faultline).get("metadata", {})
    value = metadata.get("measured_steps")
    steps = int(value) if value else STEPS
    count = len(metadata.get("steps", []))
    return steps, (max(0, count - steps), count - 2) if count >= 2 else None


def bound_ns(trace, budget, profile, faultline, span):
    """`faultline bound`'s measured_steps bound for the trace's steps SPAN, at BUDGET with
    PROFILE's host link: what no policy's measured steps can beat; None without a SPAN."""
    if not span:
        return None
    b = sim.bound(trace, run_config("ondemand", budget, profile), faultline, steps=span)
    return b["measured_steps"]["lower_bound_ns"]


def program_seconds(log):
    """The program's own measured time, from the JSON line it printed ("steps_seconds")."""
    with open(log, errors="replace") as f:
        for line in f:
            if line.startswith("{") and "steps_seconds" in line:
                return json.loads(line)["steps_seconds"]
    return None


def runs(folder, pattern):
    """{(program, policy, budget): [doc per repeat]} of the results in FOLDER named
    PROGRAM-POLICY-BUDGET[.rR].json."""
    out = {}
    name = re.compile(r"^(?P<p>[a-z0-9]+)-(?P<pol>[a-z]+)-(?P<b>[0-9.]+?)(\.r\d+)?\.json$")
    for path in sorted(glob.glob(os.path.join(folder, pattern))):
        m = name.match(os.path.basename(path))
        if not m:
            continue
        with open(path) as f:
            out.setdefault((m["p"], m["pol"], m["b"]), []).append(json.load(f))
    return out


def budget_bytes(doc):
    """The bytes a program run's budget came to (0: none)."""
    cfg = doc["config"]
    if isinstance(cfg.get("budget"), dict):
        return cfg["budget"]["resolved_bytes"]
    return cfg["budget_bytes"]  # a result of h100-91f89b91-program


def decision_ns(docs):
    """The CPU time the policy's decisions took at each launch in the program (the median over
    the repeats of results.policy_decision_ns over results.kernels), whole ns."""
    return round(median([d["results"].get("policy_decision_ns", 0) / d["results"]["kernels"]
                         for d in docs]))


def run_config(policy, budget, profile, launch_ns=0, params=None):
    """The run config that simulates a program run: capacity mode "program" at BUDGET, POLICY
    with PARAMS, PROFILE's machine keys and the policy's decisions at each launch
    (policy_launch_ns)."""
    config = {"capacity": {"fraction_of_footprint": float(budget), "mode": "program"},
              "policy": {"name": policy, **({"params": params} if params else {})},
              **profile_keys(profile)}
    if launch_ns:
        config["policy_launch_ns"] = launch_ns
    return config


def simulate(trace, policy, budget, profile, faultline, launch_ns=0, steps=STEPS, params=None):
    """The simulated measured steps' time, their migration stream's busy time and their kernels'
    all-resident time, in ns."""
    config = run_config(policy, budget, profile, launch_ns, params)
    doc = sim.simulate(trace, config, faultline)
    return (measured_ns(doc, steps), measured_ns(doc, steps, "migration_gpu_ns"),
            measured_ns(doc, steps, "compute_ns"))


def campaign_params(folder):
    """The params each policy ran with where the campaign's binary had other defaults than this
    revision's: FOLDER/policy_params.json, {"POLICY": {PARAM: VALUE}} (the runs record only the
    params given, `{}`), else none."""
    path = os.path.join(folder, "policy_params.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise ValueError(f"{path}: expected {{\"POLICY\": {{PARAM: VALUE}}}}")
    return doc


def signed(values):
    return round(median(values), 4) if values else None


def summary_of(rows, key, per_program=True):
    """Median and max |error| over the rows, the signed median of each policy, and the same for
    each program on its own."""
    errors = [r[key] for r in rows if r.get(key) is not None]
    by_policy = {p: signed([r[key] for r in rows if r["policy"] == p and r.get(key) is not None])
                 for p in POLICIES}
    out = {"runs": len(errors),
           "median_abs_time_error": signed([abs(e) for e in errors]),
           "max_abs_time_error": round(max(abs(e) for e in errors), 4) if errors else None,
           "signed_median_by_policy": {p: v for p, v in by_policy.items() if v is not None}}
    if per_program:
        out["by_program"] = {p: summary_of([r for r in rows if r["program"] == p], key, False)
                             for p in sorted({r["program"] for r in rows})}
    return out


def report(folder, faultline):
    with open(os.path.join(folder, "profile.txt")) as f:
        profile_name = f.read().strip()
    # Only the program's eviction calls over discarded pages price what eviction_discarded_ns
    # says; a calibration before its benchmark takes it from the GPU model's shipped profile
    # (a copy in `scratch`, removed when the report is made).
    scratch = tempfile.TemporaryDirectory(prefix="faultline-program-")
    profile, filled = filled_profile(
        os.path.join(folder, "profile", "gpus", profile_name + ".json"),
        profile_name.split("-")[0], scratch.name, ("eviction_discarded_ns",))
    params = campaign_params(folder)
    program_runs = runs(folder, "*.json")
    replays = runs(os.path.join(folder, "replay"), "*.json")
    programs = sorted({k[0] for k in program_runs})
    rows, overhead, unsimulated = [], [], []
    for p in programs:
        plain = [program_seconds(f) for f in sorted(glob.glob(os.path.join(folder, p + ".plain*.log")))]
        plain = [s for s in plain if s]
        under = [program_seconds(f) for f in
                 sorted(glob.glob(os.path.join(folder, p + "-ondemand-1.0*.log")))]
        under = [s for s in under if s]
        if plain and under:
            # The library's own CPU time a launch (results.run_library_ns, from binaries that
            # measure it): what the run adds to a CPU-bound step, less CUPTI's dispatch.
            library = [d["results"]["run_library_ns"] / d["results"]["kernels"]
                       for d in program_runs.get((p, "ondemand", "1.0"), [])
                       if "run_library_ns" in d["results"] and d["results"]["kernels"]]
            overhead.append({"program": p, "plain_seconds": round(median(plain), 4),
                             "run_seconds": round(median(under), 4),
                             "cost": round(median(under) / median(plain) - 1, 4),
                             "library_us_a_launch": round(median(library) / 1e3, 2)
                             if library else None})
        trace = os.path.join(folder, p + ".fltrace")
        steps, span = measured_steps(trace, faultline)
        for b in BUDGETS:
            bound = None
            base = [measured_ns(d, steps) for d in program_runs.get((p, "ondemand", b), [])]
            base = median([t for t in base if t]) if any(base) else None
            for pol in POLICIES:
                docs = program_runs.get((p, pol, b))
                if not docs:
                    continue
                times = [t for t in (measured_ns(d, steps) for d in docs) if t]
                if not times:
                    continue
                t_prog = median(times)
                if bound is None:
                    bound = bound_ns(trace, b, profile, faultline, span)
                rep = [t for t in (measured_ns(d, steps) for d in replays.get((p, pol, b), []))
                       if t]
                t_rep = median(rep) if rep else None
                launch_ns = decision_ns(docs)
                try:
                    t_sim, m_sim, c_sim = simulate(trace, pol, b, profile, faultline, launch_ns,
                                                   steps, params.get(pol))
                except sim.SimulationError as e:
                    unsimulated.append({"program": p, "policy": pol, "budget": float(b),
                                        "message": str(e)})
                    t_sim = m_sim = c_sim = None
                row = {"program": p, "policy": pol, "budget": float(b), "repeats": len(times),
                       "program_s": round(t_prog / 1e9, 4),
                       "spread": round(max(times) / min(times) - 1, 4),
                       "speedup_over_ondemand": round(base / t_prog, 3) if base else None,
                       "replay_s": round(t_rep / 1e9, 4) if t_rep else None,
                       "sim_s": round(t_sim / 1e9, 4) if t_sim else None,
                       "bound_s": round(bound / 1e9, 4) if bound else None,
                       "over_bound": round(t_prog / bound, 2) if bound else None,
                       "policy_launch_ns": launch_ns,
                       "peak_resident_bytes": max(s.get("peak_resident_bytes", 0)
                                                  for d in docs for s in d["steps"]),
                       "budget_bytes": budget_bytes(docs[0])}
                row.update(time_split(docs, steps, t_prog, t_sim, m_sim, c_sim))
                row["replay_error"] = round(t_rep / t_prog - 1, 4) if t_rep else None
                row["sim_error"] = round(t_sim / t_prog - 1, 4) if t_sim else None
                rows.append(row)
    return {"campaign": os.path.relpath(folder, REPO), "profile": profile_name,
            "profile_filled": filled,
            "programs": programs, "ground_truth": "program", "overhead": overhead,
            "simulator": summary_of(rows, "sim_error"), "replay": summary_of(rows, "replay_error"),
            "rows": rows, "unsimulated": unsimulated,
            "without_result": [{"run": r["run"], "message": r["message"]} for r in refusals(folder)]}


def time_split(docs, steps, t_prog, t_sim, m_sim, c_sim):
    """The row's split of each side's measured steps, where the runs DOCS measured their
    migration stream: its time (program_migration_s, sim_migration_s) and, for runs with
    FAULTS_FOR_COST faults or more, the rest less the kernels' all-resident time C_SIM over the
    books' faults, what a fault cost each side with the CPU's gaps (program_us_a_fault,
    sim_us_a_fault); {} where they did not."""
    m_prog = [m for m in (measured_ns(d, steps, "migration_gpu_ns") for d in docs)
              if m is not None]
    if not m_prog:
        return {}
    out = {"program_migration_s": round(median(m_prog) / 1e9, 4),
           "sim_migration_s": round(m_sim / 1e9, 4) if m_sim is not None else None}
    faults = [f for f in (measured_ns(d, steps, "faults") for d in docs) if f is not None]
    if faults and median(faults) >= FAULTS_FOR_COST and None not in (t_sim, m_sim, c_sim):
        n = median(faults)
        out["program_us_a_fault"] = round((t_prog - median(m_prog) - c_sim) / n / 1e3, 2)
        out["sim_us_a_fault"] = round((t_sim - m_sim - c_sim) / n / 1e3, 2)
    return out


def ratio(a, b):
    return round(a / b, 3) if a is not None and b else None


def rest(row):
    """The simulated time besides the migration stream's, or None."""
    if row["sim_s"] is None or row["sim_migration_s"] is None:
        return None
    return round(row["sim_s"] - row["sim_migration_s"], 4)


def pct(x):
    return "" if x is None else f"{100 * x:+.1f}%"


def markdown(doc, command):
    lines = [f"# The program as ground truth: {os.path.basename(doc['campaign'])}", "",
             f"Made by `{command}` from `{doc['campaign']}/` (its `machine.txt` names the GPU); "
             f"simulated in capacity mode \"program\" with the instance's quick calibration "
             f"`{doc['profile']}`, each run charging the program's CPU what the policy's "
             "decisions took at each launch in the program (`policy_launch_ns`, the run's "
             "`policy_decision_ns` over its launches; results without `policy_start_ns` count "
             "the policy's start in it too, the oracle's reading of its trace). Times are the "
             "measured steps (the capture's `measured_steps`) but the last, which in the trace "
             "runs to the program's end, its frees included, and in the run's rows does not; the "
             "median of the repeats; errors are against the program under `faultline run`."
             + (f" The calibration predates the benchmark of {', '.join(doc['profile_filled'])}: "
                "taken from the GPU model's shipped profile." if doc.get("profile_filled") else ""),
             "",
             "## What `faultline run` costs the program", "",
             "The program's own measured time alone and under `faultline run --policy ondemand` "
             "with no budget (the median of the repeats), and the injection library's own CPU "
             "time over the whole run, set-up included (a kernel's first launch reads its "
             "parameters), over its launches, where the binary measured it "
             "(`results.run_library_ns`):", ""]
    lines += tables.markdown_table(
        ["program", "alone (s)", "under faultline run (s)", "cost", "library a launch (us)"],
        [[o["program"], o["plain_seconds"], o["run_seconds"], pct(o["cost"]),
          "" if o.get("library_us_a_launch") is None else o["library_us_a_launch"]]
         for o in doc["overhead"]])
    for who in ("simulator", "replay"):
        s = doc[who]
        lines += ["", f"## The {who} against the program", "",
                  f"{s['runs']} runs: median |error| {pct(s['median_abs_time_error'])}, "
                  f"max {pct(s['max_abs_time_error'])}; signed median by policy: " +
                  ", ".join(f"{p} {pct(v)}" for p, v in s["signed_median_by_policy"].items()) + ".",
                  ""]
        lines += tables.markdown_table(
            ["program", "runs", "median abs error", "max abs error"] + POLICIES,
            [[p, b["runs"], pct(b["median_abs_time_error"]), pct(b["max_abs_time_error"])] +
             [pct(b["signed_median_by_policy"].get(pol)) for pol in POLICIES]
             for p, b in s["by_program"].items() if b["runs"]])
    lines += ["", "## Every run", "",
              "bound: `faultline bound --steps` over the measured steps at the run's budget and the "
              "instance's host link, the larger of the program's own time for those steps and the "
              "fewest bytes any policy must bring in them (`sim/README.md`); no policy can beat it.",
              ""]
    lines += tables.markdown_table(
        ["program", "policy", "budget", "program (s)", "spread", "speedup over ondemand",
         "replay (s)", "replay error", "decisions a launch (us)", "sim (s)", "sim error",
         "bound (s)", "program / bound"],
        [[r["program"], r["policy"], f"{r['budget']:.0%}", r["program_s"], pct(r["spread"]),
          r["speedup_over_ondemand"], r["replay_s"], pct(r["replay_error"]),
          round(r["policy_launch_ns"] / 1e3, 1), r["sim_s"], pct(r["sim_error"]),
          r.get("bound_s"), r.get("over_bound")]
         for r in doc["rows"]])
    split = [r for r in doc["rows"] if r.get("program_migration_s") is not None]
    if split:
        lines += ["", "## Where the time goes: the migrations and the rest", "",
                  "The migration stream's GPU time over the measured steps (the budget's and the "
                  "policy's evictions, prefetches and discards, `steps[].migration_gpu_ns`: "
                  "measured by events in the program, the stream's busy time in the simulator) "
                  "and the rest of each side's time (kernels with their faults, and the CPU); "
                  "for runs with many faults, the rest less the kernels' all-resident time over "
                  "the books' faults (`steps[].faults`): what a fault cost, the CPU's gaps "
                  "included:", ""]
        lines += tables.markdown_table(
            ["program", "policy", "budget", "migrations, program (s)", "migrations, sim (s)",
             "sim / program", "rest, program (s)", "rest, sim (s)", "sim / program",
             "a fault, program (us)", "a fault, sim (us)"],
            [[r["program"], r["policy"], f"{r['budget']:.0%}", r["program_migration_s"],
              r["sim_migration_s"], ratio(r["sim_migration_s"], r["program_migration_s"]),
              round(r["program_s"] - r["program_migration_s"], 4),
              rest(r), ratio(rest(r), r["program_s"] - r["program_migration_s"]),
              r.get("program_us_a_fault", ""), r.get("sim_us_a_fault", "")]
             for r in split])
    if doc["without_result"] or doc["unsimulated"]:
        lines += ["", "## Runs without a result", ""]
        lines += [f"- `{r['run']}`: {r['message']}" for r in doc["without_result"]]
        lines += [f"- {r['program']} {r['policy']} {r['budget']:.0%}, the simulator: {r['message']}"
                  for r in doc["unsimulated"]]
    return lines


def figure(doc, path):
    plt = tables.pyplot()
    programs = doc["programs"]
    fig, axes = plt.subplots(1, len(programs), figsize=(4.5 * len(programs), 3.6), squeeze=False)
    low = min(r["budget"] for r in doc["rows"])  # the tightest budget the campaign ran
    for ax, p in zip(axes[0], programs):
        rows = [r for r in doc["rows"] if r["program"] == p and r["budget"] == low]
        xs = range(len(rows))
        ax.bar([x - 0.27 for x in xs], [r["program_s"] for r in rows], 0.27, label="program")
        ax.bar(list(xs), [r["replay_s"] or 0 for r in rows], 0.27, label="replay")
        ax.bar([x + 0.27 for x in xs], [r["sim_s"] or 0 for r in rows], 0.27, label="simulator")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r["policy"] for r in rows], rotation=30, fontsize=8)
        ax.set_title(f"{p}, {low:.0%} budget", fontsize=9)
    axes[0][0].set_ylabel("measured steps (s)")
    tables.finish_figure(fig, path, ax=axes[0][-1], legend=7)


def write_report(campaign, name, doc, markdown_of, write_reports):
    """DOC (with the command that makes it) as NAME.json and markdown_of(DOC, command) as NAME.md
    in live/reports/CAMPAIGN/ (write_reports) or out/live/CAMPAIGN/; returns that folder."""
    out = tables.reports_dir("live", campaign, write_reports)
    command = f"experiments/live/fidelity.py {name} {campaign}"
    doc["command"] = command
    tables.write_json(os.path.join(out, name + ".json"), doc)
    tables.write_lines(os.path.join(out, name + ".md"), markdown_of(doc, command))
    return out


def main(argv=None, prog=None):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("campaign", nargs="?", default="h100-program",
                        help="a folder under live/data/ (default h100-program)")
    parser.add_argument("--write-reports", action="store_true",
                        help="write into live/reports/CAMPAIGN/ (default out/live/CAMPAIGN/)")
    parser.add_argument("--faultline", default=FAULTLINE, help="the faultline binary")
    args = parser.parse_args(argv)
    folder = os.path.join(EXPERIMENTS, "live", "data", args.campaign)
    if not os.path.isdir(folder):
        raise SystemExit(f"program: {folder}: no such campaign")
    doc = report(folder, args.faultline)
    out = write_report(args.campaign, "program", doc, markdown, args.write_reports)
    if doc["rows"]:
        figure(doc, os.path.join(out, "program.png"))
    print(f"program: {len(doc['rows'])} runs; simulator {doc['simulator']['median_abs_time_error']}"
          f" median |error|, replay {doc['replay']['median_abs_time_error']}; written to {out}")
    return 0
