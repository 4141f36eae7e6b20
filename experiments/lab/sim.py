"""Running the simulator from Python: `faultline sim`, `bound` and `trace stats` of a trace under
a run config with overrides merged in, and a trace as it was at a git revision.

    from lab import sim
    result = sim.simulate("traces/real/stream.fltrace", {"gpu": "h200", ...}, iterations=6)
"""
import functools
import json
import os
import subprocess
import tempfile

from lab.paths import FAULTLINE, REPO


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


def bound(trace, config, faultline=None, steps=None, **overrides):
    """`faultline bound` of TRACE under CONFIG (as simulate takes it): the lower bound on any
    policy's time (its "bound" object: lower_bound_ns, all_resident_ns, min_bytes_host_to_gpu;
    measured_steps: the same for the steps STEPS = (FIRST, LAST) names, by default 0 on)."""
    extra = ["--steps", f"{steps[0]}:{steps[1]}"] if steps else []
    return _run("bound", trace, config, faultline, overrides, extra)["bound"]


def trace_stats(trace, faultline=None):
    """`faultline trace stats` of TRACE (counts, footprint, bytes allocated and read by the host);
    raises SimulationError with the binary's message when it fails."""
    out = subprocess.run([faultline or FAULTLINE, "trace", "stats", trace], capture_output=True,
                         text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise SimulationError(lines[-1] if lines else f"exit status {out.returncode}")
    return json.loads(out.stdout)


def _run(command, trace, config, faultline, overrides, extra=()):
    if isinstance(config, str):
        with open(config) as f:
            config = json.load(f)
    config = deep_merge(config, overrides)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        progress = ["--no-progress"] if command == "sim" else []
        out = subprocess.run([faultline or FAULTLINE, command, "--config", f.name, "--trace", trace]
                             + progress + list(extra), capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise SimulationError(lines[-1] if lines else f"exit status {out.returncode}")
    return json.loads(out.stdout)


EXTRACTED = os.path.join(REPO, "out", "traces")  # trace_at's copies: REVISION/PATH


def extracted_at(path):
    """The revision a trace_at copy was taken at, or None for any other path."""
    rel = os.path.relpath(path, EXTRACTED)
    return None if rel.startswith(os.pardir) or os.path.isabs(rel) else rel.split(os.sep)[0]


def trace_at(path, revision=None):
    """The trace PATH (relative to the repository) as it was at git REVISION, extracted once into
    out/traces/REVISION/PATH; PATH itself when REVISION is None. A campaign replayed on traces
    since recaptured names their revision in its manifest (`traces_revision`). Without REVISION, a
    relative PATH that is not there from the working directory is taken from the repository."""
    if not revision:
        return path if os.path.isabs(path) or os.path.exists(path) else os.path.join(REPO, path)
    out = os.path.join(EXTRACTED, revision, path)
    if not os.path.exists(out):
        os.makedirs(os.path.dirname(out), exist_ok=True)
        blob = subprocess.run(["git", "-C", REPO, "show", f"{revision}:{path}"],
                              capture_output=True, check=True).stdout
        with tempfile.NamedTemporaryFile("wb", dir=os.path.dirname(out), delete=False) as f:
            f.write(blob)  # threads may extract the same trace: each its own file, then one name
        os.replace(f.name, out)
    return out




@functools.lru_cache(maxsize=None)
def _blob(revision, path):
    """The git object id of PATH at REVISION ("" where PATH was not committed there), and of the
    file as it is now in the working tree ("" where there is none)."""
    then = subprocess.run(["git", "-C", REPO, "rev-parse", "--verify", "--quiet",
                           f"{revision}:{path}"], capture_output=True, text=True).stdout.strip()
    now_path = os.path.join(REPO, path)
    now = (subprocess.run(["git", "-C", REPO, "hash-object", now_path], capture_output=True,
                          text=True).stdout.strip() if os.path.isfile(now_path) else "")
    return then, now


def replayed_trace(path, run_revision, traces_revision=None):
    """The trace file a live run replayed: PATH at the campaign's TRACES_REVISION where its
    manifest names one, else at the revision the run's own result names (RUN_REVISION, the
    replay's build; a "-dirty" mark is dropped), so a trace recaptured since is not compared with
    runs of its predecessor. PATH as it is now where it is unchanged since, or was never committed
    (a trace a campaign captured into its own folder)."""
    if traces_revision:
        return trace_at(path, traces_revision)
    revision = (run_revision or "").removesuffix("-dirty")
    if not revision or revision == "unknown" or os.path.isabs(path):
        return trace_at(path)
    then, now = _blob(revision, path)
    return trace_at(path, revision) if then and then != now else trace_at(path)
