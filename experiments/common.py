"""What every experiment script shares: running the simulator, reading a campaign's results,
medians of repeats, tables and the figure style.

    import common                       (scripts put experiments/ on sys.path first)
    result = common.simulate("traces/real/stream.fltrace", {"gpu": "h200", ...})
    runs = common.load_runs("experiments/live/data/h200")
    medians = common.median_of_repeats(runs)

A campaign folder (`STUDY/data/CAMPAIGN/`) holds result JSON files as the GPU machine or the
simulator wrote them and a `manifest.json` (revision, machine, command, refusals with their
messages). Everything about a run is read from the result itself, never from its file name: the
trace from `trace.path`, the policy from `config.policy`, the budget from
`config.budget.fraction_of_footprint` (live) or `config.capacity.fraction_of_footprint`
(simulated), the steps from `config.iterations` (1 where absent). The one thing a result does
not carry is which repeat it was: repeat R > 1 of a run is the file NAME.rR.json.
"""
import csv
import json
import os
import statistics
import subprocess
import tempfile

EXPERIMENTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(EXPERIMENTS)
FAULTLINE = os.path.join(REPO, "build", "faultline")
FIGURE_DPI = 120


class SimulationError(RuntimeError):
    """`faultline sim` failed; the message is the last line it wrote on stderr."""


def deep_merge(base, overrides):
    """base with overrides set into it, dicts merged key by key (neither argument changes)."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def simulate(trace, config, faultline=None, **overrides):
    """`faultline sim` of TRACE under CONFIG (a run config dict, or the path of one), with the
    keyword overrides merged into it (`capacity={"mode": "budget"}`, `iterations=6`). Returns
    the result JSON; raises SimulationError with the simulator's message when it fails."""
    return _run("sim", trace, config, faultline, overrides)


def bound(trace, config, faultline=None, **overrides):
    """`faultline bound` of TRACE under CONFIG (as simulate takes it): the lower bound on any
    policy's time (its "bound" object: lower_bound_ns, all_resident_ns, min_bytes_host_to_gpu)."""
    return _run("bound", trace, config, faultline, overrides)["bound"]


def trace_stats(trace, faultline=None):
    """`faultline trace stats` of TRACE (counts, footprint, bytes allocated and read by the host);
    raises SimulationError with the binary's message when it fails."""
    out = subprocess.run([faultline or FAULTLINE, "trace", "stats", trace], capture_output=True,
                         text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise SimulationError(lines[-1] if lines else f"exit status {out.returncode}")
    return json.loads(out.stdout)


def _run(command, trace, config, faultline, overrides):
    if isinstance(config, str):
        with open(config) as f:
            config = json.load(f)
    config = deep_merge(config, overrides)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        progress = ["--no-progress"] if command == "sim" else []
        out = subprocess.run([faultline or FAULTLINE, command, "--config", f.name, "--trace", trace]
                             + progress, capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise SimulationError(lines[-1] if lines else f"exit status {out.returncode}")
    return json.loads(out.stdout)


def trace_at(path, revision=None):
    """The trace PATH (relative to the repository) as it was at git REVISION, extracted once into
    out/traces/REVISION/PATH; PATH itself when REVISION is None. A campaign replayed on traces
    since recaptured names their revision in its manifest (`traces_revision`). Without REVISION, a
    relative PATH that is not there from the working directory is taken from the repository."""
    if not revision:
        return path if os.path.isabs(path) or os.path.exists(path) else os.path.join(REPO, path)
    out = os.path.join(REPO, "out", "traces", revision, path)
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        blob = subprocess.run(["git", "-C", REPO, "show", f"{revision}:{path}"],
                              capture_output=True, check=True).stdout
        with tempfile.NamedTemporaryFile("wb", dir=os.path.dirname(out), delete=False) as f:
            f.write(blob)  # threads may extract the same trace: each its own file, then one name
        os.replace(f.name, out)
    return out


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
    return None


def repeat_of(path):
    """Which repeat a result file is: NAME.rR.json is repeat R, NAME.json repeat 1."""
    stem = os.path.basename(path)[:-len(".json")]
    head, _, tail = stem.rpartition(".r")
    return int(tail) if head and tail.isdigit() else 1


def run_of(path, doc):
    """One result as the scripts read it."""
    cfg = doc.get("config", {})
    policy = cfg.get("policy", {})
    return {"path": path, "trace_path": doc["trace"]["path"],
            "trace": trace_name(doc["trace"]["path"]),
            "policy": policy.get("name"), "params": policy.get("params") or {},
            "budget": budget_of(doc), "iterations": cfg.get("iterations", 1),
            "device": cfg.get("device"), "revision": doc.get("faultline", {}).get("git_revision"),
            "repeat": repeat_of(path), "results": doc["results"], "doc": doc}


def load_runs(folder, pattern=".json"):
    """Every result in a campaign folder (files ending in PATTERN, the manifest excepted), in
    file-name order, each read by run_of."""
    runs = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(pattern) or name == "manifest.json":
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
    """The JSON document at PATH; SystemExit naming WHO, the file and what is wrong where it is
    missing or malformed."""
    try:
        with open(path) as f:
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


def write_csv(path, rows, fields=None):
    """Rows (dicts) as CSV, columns FIELDS (default: the first row's keys)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields or list(rows[0].keys()), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def markdown_table(header, rows):
    """A markdown table: HEADER a list of column titles, ROWS lists of cells (already text)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_json(path, doc, sort_keys=False, newline=True):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=sort_keys)
        if newline:
            f.write("\n")


def pyplot():
    """matplotlib's pyplot, drawing to files (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path):
    """Every figure is saved alike: PNG at FIGURE_DPI."""
    fig.savefig(path, dpi=FIGURE_DPI)


def reports_dir(study, name, write_reports, out_root=None):
    """Where a script writes a report: STUDY/reports/NAME under experiments/ when asked to
    (--write-reports), else out/STUDY/NAME (or OUT_ROOT/NAME) in the repository."""
    if write_reports:
        path = os.path.join(EXPERIMENTS, study, "reports", name)
    else:
        path = os.path.join(out_root or os.path.join(REPO, "out", study), name)
    os.makedirs(path, exist_ok=True)
    return path
