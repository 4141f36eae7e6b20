"""experiments/compare/compare.py's split of a run's time beside its bound: the simulator's
host-link counts reach the comparison's rows, table and figure (lab/compare.py)."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "experiments"))
from lab import compare  # noqa: E402

FAULTLINE = os.environ.get("FAULTLINE_BIN", os.path.join(REPO, "build", "faultline"))


def simulate(tmp_path, policy):
    trace = tmp_path / "dnn.fltrace"
    if not trace.exists():
        subprocess.run([FAULTLINE, "synth", "--pattern", "dnn", "--footprint", "256M",
                        "--out", str(trace)], check=True, capture_output=True)
    config = tmp_path / f"{policy}.json"
    config.write_text(json.dumps({"policy": {"name": policy},
                                  "capacity": {"fraction_of_footprint": 0.5}}))
    out = subprocess.run([FAULTLINE, "sim", "--config", str(config), "--trace", str(trace)],
                         check=True, capture_output=True, text=True).stdout
    return {"point": {"trace": str(trace), "policy": {"name": policy, "params": {}},
                      "capacity_fraction": 0.5, "config": {}},
            "results": json.loads(out)["results"]}


def test_link_counts_reach_the_split(tmp_path):
    sweep = tmp_path / "results.json"
    sweep.write_text(json.dumps({"points": [simulate(tmp_path, p) for p in ("ondemand", "pump")]}))
    rows = compare.load(str(sweep))
    for r in rows:
        # Both directions carried copies at 50%, and the overlap is at most either direction.
        assert r["link_to_gpu_busy_ns"] > 0 and r["link_to_host_busy_ns"] > 0
        assert 0 <= r["link_both_busy_ns"] <= min(r["link_to_gpu_busy_ns"],
                                                  r["link_to_host_busy_ns"])
        assert r["link_to_gpu_busy_ns"] <= r["time"]
        r["bound"] = r["time"] // 2
    lines = compare.above_bound_lines(rows)
    ondemand = next(line for line in lines if line.startswith("| dnn | ondemand |"))
    cells = [c.strip() for c in ondemand.strip("|").split("|")]
    assert cells[4] == "2.00"  # time / bound
    assert cells[9] == f"{rows[0]['link_to_gpu_busy_ns'] / 1e9:.3f}"
    # Driver mode at 50%: evictions happen inside fault batches, and no migration stream.
    assert rows[0]["waits_eviction_ns"] > 0
    assert rows[0]["waits_migration_stream_ns"] == 0
    compare.above_bound_figure(rows, str(tmp_path / "above_bound.png"))
    assert (tmp_path / "above_bound.png").stat().st_size > 0
    # Results without the link's counts (older sweeps) leave those cells empty.
    del rows[0]["link_to_gpu_busy_ns"]
    assert "|  |" in compare.above_bound_lines(rows)[5]
