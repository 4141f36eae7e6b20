"""The Python API (issue 22): faultline.simulate against `faultline sim`, errors as located
Python exceptions, the GIL released while simulating, streaming trace reading, the policy list.
Needs the package installed (`pip install .`, which setup.sh does into .venv)."""
import concurrent.futures
import json
import os
import subprocess
import threading
import time

import pytest

if os.environ.get("FAULTLINE_API_REQUIRED"):  # CTest: setup.sh installed it
    import faultline
else:
    faultline = pytest.importorskip("faultline", reason="not installed: pip install .")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("FAULTLINE_BIN", os.path.join(REPO, "build", "faultline"))
STREAM = os.path.join(REPO, "traces", "real", "stream.fltrace")
RESNET = os.path.join(REPO, "traces", "real", "resnet50.fltrace")
DEFAULT = os.path.join(REPO, "configs", "runs", "default.json")


def test_simulate_matches_the_command_line(tmp_path):
    out = tmp_path / "r.json"
    subprocess.run([CLI, "sim", "--trace", STREAM, "--config", DEFAULT, "--out", str(out)],
                   check=True, capture_output=True)
    cli = json.loads(out.read_text())
    api = faultline.simulate(STREAM, DEFAULT)
    assert set(api) == set(cli)
    assert api["results"] == cli["results"]
    assert api["config"] == cli["config"]


def test_overrides_merge_into_the_config():
    half = faultline.simulate(STREAM, DEFAULT, capacity={"fraction_of_footprint": 0.5},
                              policy={"name": "pump"})
    assert half["config"]["policy"]["name"] == "pump"
    assert half["config"]["capacity"]["fraction_of_footprint"] == 0.5
    with open(DEFAULT) as f:
        doc = json.load(f)
    doc["policy"] = {"name": "pump"}
    doc["capacity"] = {**doc.get("capacity", {}), "fraction_of_footprint": 0.5}
    assert faultline.simulate(STREAM, doc)["results"] == half["results"]


def test_errors_are_located_exceptions(tmp_path):
    with pytest.raises(faultline.ConfigError, match=r"\$\.policy\.name.*known policies: .*ondemand"):
        faultline.simulate(STREAM, DEFAULT, policy={"name": "no-such-policy"})
    with pytest.raises(faultline.ConfigError, match=r"\$\.capacity\.fraction_of_footprint"):
        faultline.simulate(STREAM, DEFAULT, capacity={"fraction_of_footprint": "half"})
    with pytest.raises(faultline.TraceError, match="missing.fltrace"):
        faultline.simulate(tmp_path / "missing.fltrace", DEFAULT)
    corrupt = tmp_path / "corrupt.fltrace"
    corrupt.write_bytes(open(STREAM, "rb").read()[:300])
    with pytest.raises(faultline.TraceError, match="byte"):
        faultline.simulate(corrupt, DEFAULT)
    with pytest.raises(faultline.ConfigError, match="no such run config"):
        faultline.simulate(STREAM, tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"policy": ')
    with pytest.raises(faultline.ConfigError, match=r"bad\.json: line 1"):
        faultline.simulate(STREAM, bad)
    assert issubclass(faultline.TraceError, faultline.Error)


def test_simulations_run_in_parallel_without_the_gil():
    serial = faultline.simulate(RESNET, DEFAULT)["results"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: faultline.simulate(RESNET, DEFAULT)["results"], range(2)))
    assert runs == [serial, serial]
    # A Python thread keeps running while a simulation holds no GIL.
    ticks, done = [0], threading.Event()

    def tick():
        while not done.is_set():
            ticks[0] += 1

    thread = threading.Thread(target=tick)
    thread.start()
    start, before = time.perf_counter(), ticks[0]
    time.sleep(0.2)  # the thread's rate with the main thread idle
    rate = (ticks[0] - before) / (time.perf_counter() - start)
    start, before = time.perf_counter(), ticks[0]
    faultline.simulate(RESNET, DEFAULT)
    seconds, during = time.perf_counter() - start, ticks[0] - before
    done.set()
    thread.join()
    # Holding the GIL would leave the thread one switch interval (5 ms) of the simulation.
    assert during > 0.25 * rate * seconds, (during, rate, seconds)


def test_read_trace_streams_every_record():
    records = list(faultline.read_trace(STREAM))
    stats = faultline.trace_stats(STREAM)
    assert len(records) == stats["records"]
    kernels = [r for r in records if r["type"] == "kernel"]
    assert len(kernels) == stats["kernels"] and all("accesses" in k for k in kernels)
    assert isinstance(faultline.trace_metadata(STREAM), dict)
    with pytest.raises(faultline.TraceError):
        next(faultline.read_trace(os.path.join(REPO, "no-such.fltrace")))


def test_policies_are_the_registry():
    names = faultline.policies()
    assert names == sorted(names)
    assert {"ondemand", "deepum", "pump", "oracle", "harvest"} <= set(names)


def test_sweep_returns_one_row_per_point(tmp_path):
    spec = {"name": "api", "base": DEFAULT, "traces": [STREAM],
            "policies": ["ondemand", "pump"], "capacity_fractions": [1.0, 0.5],
            "vary": {"/driver/eviction": ["fifo", "lru"]}, "out": str(tmp_path / "sweep")}
    frame = faultline.sweep(spec, jobs=2)
    assert len(frame) == 8 and list(frame["index"]) == list(range(8))
    assert {"results.total_time_ns", "config.capacity.fraction_of_footprint",
            "config.driver.eviction", "varied./driver/eviction", "git_revision"} <= set(frame)
    assert (frame["config.driver.eviction"] == frame["varied./driver/eviction"]).all()
    row = frame[(frame["policy"] == "pump") & (frame["capacity_fraction"] == 0.5)
                & (frame["varied./driver/eviction"] == "lru")].iloc[0]
    one = faultline.simulate(STREAM, DEFAULT, policy={"name": "pump", "params": {}},
                             capacity={"fraction_of_footprint": 0.5},
                             driver={"eviction": "lru"})
    assert row["results.total_time_ns"] == one["results"]["total_time_ns"]
    # A second call reuses every finished point.
    again = faultline.sweep(spec, jobs=2)
    assert again.attrs["reused"] == 8 and again.attrs["ran"] == 0
    assert again.equals(frame)
    spec["policies"] = ["no-such-policy"]
    with pytest.raises(faultline.ConfigError,
                       match=r"^<sweep dict> \(point 0\): \$\.policy\.name: unknown policy"):
        faultline.sweep(spec)
