"""Reading a campaign: its results, its manifest and its refusals, and one run per setting as the
median of its repeats.

A campaign folder (`STUDY/data/CAMPAIGN/`) holds result JSON files as the GPU machine or the
simulator wrote them and a `manifest.json` (revision, machine, command, refusals with their
messages). Everything about a run is read from the result itself, never from its file name: the
trace from `trace.path`, the policy from `config.policy`, the budget from
`config.budget.fraction_of_footprint` (live) or `config.capacity.fraction_of_footprint`
(simulated), the steps from `config.iterations` (1 where absent). The one thing a result does
not carry is which repeat it was: repeat R > 1 of a run is the file NAME.rR.json.

    from lab import campaigns
    runs = campaigns.load_runs("experiments/live/data/h200")
    medians = campaigns.median_of_repeats(runs)
"""
import gzip
import json
import os
import statistics

from lab.paths import REPO


def trace_name(path):
    """traces/real/gpt2-small.fltrace -> gpt2-small"""
    return os.path.basename(path).split(".")[0]


def budget_of(doc):
    """The fraction of the footprint a result ran at: the live budget or the simulated capacity
    (None where it was given in bytes)."""
    cfg = doc.get("config", {})
    for key in ("budget", "capacity"):
        if isinstance(cfg.get(key), dict):
            return cfg[key].get("fraction_of_footprint")
    return cfg.get("budget_fraction")  # a program result of h100-91f89b91-program


def repeat_of(path):
    """Which repeat a result file is: NAME.rR.json is repeat R, NAME.json repeat 1."""
    stem = os.path.basename(path)[:-len(".json")]
    head, _, tail = stem.rpartition(".r")
    return int(tail) if head and tail.isdigit() else 1


def run_of(path, doc):
    """One result as the scripts read it."""
    cfg = doc.get("config", {})
    policy = cfg.get("policy", {})
    if isinstance(policy, str):  # a program result of h100-91f89b91-program: the name alone
        policy = {"name": policy, "params": cfg.get("params")}
    return {"path": path, "trace_path": doc["trace"]["path"],
            "trace": trace_name(doc["trace"]["path"]),
            "policy": policy.get("name"), "params": policy.get("params") or {},
            "budget": budget_of(doc), "iterations": cfg.get("iterations", 1),
            "device": cfg.get("device"), "revision": doc.get("faultline", {}).get("git_revision"),
            "repeat": repeat_of(path), "results": doc["results"], "doc": doc}


def load_runs(folder, pattern=".json"):
    """Every result in a campaign folder (files ending in PATTERN, the manifest and the policy
    params its binary defaulted to, policy_params.json, excepted), in file-name order, each read
    by run_of."""
    runs = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(pattern) or name in ("manifest.json", "policy_params.json"):
            continue
        path = os.path.join(folder, name)
        with open(path) as f:
            runs.append(run_of(path, json.load(f)))
    return runs


def repo_relative(path):
    """PATH relative to the repository when it lies inside it (results name files portably)."""
    if os.path.isabs(path) and path.startswith(REPO + os.sep):
        return os.path.relpath(path, REPO)
    return path


def read_json(path, who):
    """The JSON document at PATH, gzip-compressed where PATH ends in .gz (a large record committed
    compressed); SystemExit naming WHO, the file and what is wrong where it is missing or
    malformed."""
    try:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            return json.load(f)
    except OSError as e:
        raise SystemExit(f"{who}: {path}: {e.strerror}") from None
    except ValueError as e:
        raise SystemExit(f"{who}: {path}: not JSON: {e}") from None


def load_manifest(folder):
    """The campaign's manifest.json ({} where there is none)."""
    path = os.path.join(folder, "manifest.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def refusals(folder):
    """The runs the GPU machine refused, with their messages, from the campaign's manifest."""
    return load_manifest(folder).get("refusals", [])


def median_of_repeats(runs, key=("trace", "policy", "budget"), time=("results", "total_time_ns")):
    """One run per KEY: the median of its repeats by TIME (the lower middle of an even count),
    with `repeats_s` (every repeat's time in s, sorted) and `by_repeat` (repeat -> time)."""
    groups = {}
    for run in runs:
        groups.setdefault(tuple(run[k] for k in key), []).append(run)
    out = []

    def seconds(run):
        value = run
        for k in time:
            value = value[k]
        return value

    for repeats in groups.values():
        repeats = sorted(repeats, key=seconds)
        median = dict(repeats[(len(repeats) - 1) // 2])
        median["repeats_s"] = [seconds(r) / 1e9 for r in repeats]
        median["by_repeat"] = {r["repeat"]: seconds(r) for r in repeats}
        out.append(median)
    return out


def median(values):
    return statistics.median(values)


