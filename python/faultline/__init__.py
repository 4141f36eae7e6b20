"""faultline from Python: simulate a trace under a policy and a capacity, read traces, list the
policies. The simulator is the C++ one (faultline._faultline); results are the dicts
`faultline sim --out` writes, and errors are faultline.Error subclasses carrying the same
located messages as the command line (file, record and byte, JSON path).

    import faultline
    r = faultline.simulate("traces/real/resnet50.fltrace", "configs/runs/default.json",
                           policy={"name": "pump"}, capacity={"fraction_of_footprint": 0.5})
    r["results"]["total_time_ns"]

Simulations release the GIL: run several at once from a concurrent.futures.ThreadPoolExecutor.
"""
import json
import os

from faultline._faultline import (
    ConfigError,
    Error,
    SimulationError,
    TraceError,
    UsageError,
)
from faultline._faultline import Records as _Records
from faultline._faultline import policies as _policies
from faultline._faultline import simulate as _simulate
from faultline._faultline import sweep as _sweep
from faultline._faultline import trace_stats as _trace_stats

__all__ = ["simulate", "sweep", "read_trace", "trace_stats", "trace_metadata", "policies", "Error",
           "ConfigError", "TraceError", "SimulationError", "UsageError"]


def _merged(base, overrides):
    """base with overrides set into it, dicts merged key by key."""
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _config(config):
    """(document, name for messages) of a run config given as a dict or a path."""
    if isinstance(config, dict):
        return config, "<dict>"
    path = os.fspath(config)
    try:
        with open(path) as f:
            return json.load(f), path
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such run config file") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: line {e.lineno}, column {e.colno} (byte {e.pos}): "
                          f"not JSON: {e.msg}") from None


def simulate(trace, config, **overrides):
    """The result document of `faultline sim --trace TRACE --config CONFIG` as a dict.

    config is a run config dict or the path of one; each keyword sets that top-level key, dicts
    merged into the config's (policy={"name": "pump"} keeps the rest of "policy")."""
    doc, name = _config(config)
    doc = _merged(doc, overrides)
    return json.loads(_simulate(os.fspath(trace), json.dumps(doc), name))


def sweep(spec, jobs=0):
    """Runs a sweep (a sweep file's path, or its document as a dict) as `faultline sweep` does,
    points and tables under its "out" (finished points are reused), and returns a pandas
    DataFrame with one row per point in grid order: index, trace, policy, policy_params,
    capacity_fraction, the varied values (varied.POINTER), every result (results.*), the
    resolved run config flattened (config.*) and git_revision. jobs: threads, 0 for all cores."""
    import pandas

    if isinstance(spec, dict):
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(spec, f)
        try:
            outcome = json.loads(_sweep(f.name, jobs))
        except Error as e:  # name the dict, not the file it passed through
            raise type(e)(str(e).replace(f.name, "<sweep dict>")) from None
        finally:
            os.unlink(f.name)
    else:
        outcome = json.loads(_sweep(os.fspath(spec), jobs))
    with open(os.path.join(outcome["out"], "results.json")) as f:
        points = json.load(f)["points"]
    rows = []
    for p in points:
        point = p["point"]
        rows.append({"index": point["index"], "trace": point["trace"],
                     "policy": point["policy"]["name"],
                     "policy_params": json.dumps(point["policy"].get("params", {}),
                                                 sort_keys=True),
                     "capacity_fraction": point["capacity_fraction"],
                     "varied": point.get("varied") or {}, "results": p["results"],
                     "config": p["config"], "git_revision": p["git_revision"]})
    frame = pandas.json_normalize(rows, sep=".")
    frame.attrs.update(outcome)
    return frame


def read_trace(path):
    """The trace's records, one dict each, as `faultline trace dump` writes them; streamed, so a
    trace of any size can be walked."""
    for record in _Records(os.fspath(path)):
        yield json.loads(record)


def trace_metadata(path):
    """The trace header's metadata (the program, the capture, the steps)."""
    return json.loads(_Records(os.fspath(path)).metadata())


def trace_stats(path):
    """`faultline trace stats --json`: records, kernels, footprint, steps and the rest."""
    return json.loads(_trace_stats(os.fspath(path)))


def policies():
    """The registered policies' names, as a run config's policy.name takes them."""
    return list(_policies())
