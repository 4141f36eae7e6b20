"""How fast each instance ran the runs other instances also made, and how far its own
calibration moved the simulator the same way: whether per-machine calibration follows an
instance's speed. results.py writes it into results/GPU/instances.json ("speeds") and the
README.

Each run (trace, policy, budget) made on MIN_INSTANCES instances or more gives every instance
that made it two shifts against the run's median over those instances: its live time's and its
simulated time's (each simulated with the profile its report used: the instance's own, but for a
campaign calibrated with none, simulated with the shipped profile: H100 d84f7d54's hold-out). An
instance's speed is the median of its runs' shifts; the correlation over instances of the two
says how much of the instances' differences the calibrations see.
"""
import statistics

MIN_INSTANCES = 3
MIN_RUNS = 6  # an instance's speed counts in the correlation from this many runs


def instance_of(campaign):
    """The instance a campaign ran on: GPU-ID-whatever -> ID."""
    return campaign.split("-")[1]


def speeds(reports):
    """{"instances": [{instance, campaigns, runs, live_shift, sim_shift}] slowest last,
    "correlation": of the two shifts over instances with MIN_RUNS runs or more}. REPORTS:
    {campaign: fidelity rows} (with live_s and sim_s)."""
    made_by = {}  # (trace, policy, budget) -> {instance: [(live s, simulated s)]}
    campaigns = {}
    for campaign, rows in reports.items():
        instance = instance_of(campaign)
        campaigns.setdefault(instance, []).append(campaign)
        for r in rows:
            if r.get("time_error"):  # a timed run (drained runs have none)
                key = (r["trace"], r["policy"], float(r["budget"]))
                made_by.setdefault(key, {}).setdefault(instance, []).append(
                    (float(r["live_s"]), float(r["sim_s"])))
    shifts = {}
    for by_instance in made_by.values():
        if len(by_instance) < MIN_INSTANCES:
            continue
        # An instance that made the run in two campaigns: the median of its runs.
        made = {i: (statistics.median(v[0] for v in runs), statistics.median(v[1] for v in runs))
                for i, runs in by_instance.items()}
        live = statistics.median(v[0] for v in made.values())
        sim = statistics.median(v[1] for v in made.values())
        for instance, (run_live, run_sim) in made.items():
            shifts.setdefault(instance, []).append((run_live / live - 1, run_sim / sim - 1))
    out = [{"instance": i, "campaigns": sorted(campaigns[i]), "runs": len(v),
            "live_shift": statistics.median(x for x, _ in v),
            "sim_shift": statistics.median(y for _, y in v)} for i, v in shifts.items()]
    out.sort(key=lambda e: (e["live_shift"], e["instance"]))
    counted = [e for e in out if e["runs"] >= MIN_RUNS]
    return {"min_instances_a_run": MIN_INSTANCES, "min_runs_an_instance": MIN_RUNS,
            "instances": out, "correlation": correlation([e["live_shift"] for e in counted],
                                                         [e["sim_shift"] for e in counted])}


def correlation(xs, ys):
    """Pearson's r, or None under three points or without spread."""
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx and syy else None


def readme_section(s):
    """The README's table of the instances' speeds."""
    if not s["instances"]:
        return []
    lines = ["", "## How fast each instance ran", "",
             f"Made by `experiments/live/results.py` (`lab/live/speeds.py`): each run made on "
             f"{s['min_instances_a_run']} "
             "instances or more, its live and its simulated time (each instance's own profile) "
             "against the run's median over them; per instance the median of its runs' shifts "
             "(+: slower than the others). Over the instances with "
             f"{s['min_runs_an_instance']} such runs or more the two shifts correlate at "
             + (f"{s['correlation']:.2f}" if s["correlation"] is not None else "-")
             + ": the part of the instances' differences their calibrations see.", "",
             "| instance | campaigns | runs | live time | simulated time |",
             "|---|---|---|---|---|"]
    for e in s["instances"]:
        lines.append(f"| {e['instance']} | {len(e['campaigns'])} | {e['runs']} | "
                     f"{e['live_shift']:+.1%} | {e['sim_shift']:+.1%} |")
    return lines
