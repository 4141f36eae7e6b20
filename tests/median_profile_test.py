"""experiments/lab/live/median_profile.py: each measured cost the median over the instances (one left
out when asked), a full chunk's eviction split again at the median cost per page, the fault path
and the link's overhead the shipped profile's, curves of different sizes refused; the committed
configs/gpus/h200-median.json (and h100-median.json) is what the committed calibrations give, it simulates, and the
committed evaluation's totals follow from its rows.
    median_profile_test.py FAULTLINE"""
import json
import os
import sys

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import median_profile  # noqa: E402
from lab.sim import simulate  # noqa: E402

LINK = "host_link.forward.bandwidth_gbps"


def read(*parts):
    with open(os.path.join(root, *parts)) as f:
        return json.load(f)


def instance(launch, full, page=None, gbps=40.0):
    out = {"launch_ns": launch, "eviction_full_ns": full, LINK: [[1 << 30, gbps]]}
    if page is not None:
        out["eviction_page_ns"] = page
    return out


def test_synthetic():
    shipped = read("configs", "gpus", "h200.json")
    shipped_link = read("configs", "links", shipped["host_link"] + ".json")
    costs = {"a": instance(10, 1000, 10, 30.0), "b": instance(20, 2000, None, 40.0),
             "c": instance(90, 3000, 30, 50.0)}
    profile, link = median_profile.median_profile("h200", costs, "test-median")
    assert profile["launch_ns"] == 20
    assert profile["eviction_page_ns"] == 20  # over the two instances that have one
    assert profile["eviction_ns"] == 2000 - 32 * 20
    assert link["forward"]["bandwidth_gbps"] == [[1 << 30, 40.0]]
    assert link["forward"]["overhead_ns"] == shipped_link["forward"]["overhead_ns"]
    assert link["reverse"] == shipped_link["reverse"]  # nobody measured it here
    for key in median_profile.FAULT_PATH | {"memory_bytes"}:
        assert profile[key] == shipped[key], key
    assert profile["name"] == "test-median" and profile["host_link"] == "test-median-host"
    assert "3 H200 instances' calibrations (a, b, c;" in profile["sources"][0]
    # Leaving one out: the others' median, and no page cost where none of them has one.
    out, _ = median_profile.median_profile("h200", costs, "test-median", leave_out="c")
    assert out["launch_ns"] == 15 and out["eviction_page_ns"] == 10
    assert "2 H200 instances' calibrations (a, b;" in out["sources"][0]
    none, _ = median_profile.median_profile("h200", {"b": costs["b"]}, "test-median")
    assert "eviction_page_ns" not in none and none["eviction_ns"] == 2000
    # Curves whose sizes differ have no median per point.
    costs["c"][LINK] = [[1 << 20, 10.0], [1 << 30, 50.0]]
    try:
        median_profile.median_profile("h200", costs, "test-median")
    except SystemExit as e:
        assert "differ in their sizes: " + LINK in str(e), e
    else:
        raise AssertionError("curves of different sizes were taken")


def test_committed(faultline):
    campaigns = median_profile.calibrated_campaigns("h200")
    costs = median_profile.instance_costs(campaigns)
    assert len(costs) >= 30, sorted(costs)
    for c in costs.values():  # no fault path, nothing filled from the shipped profile
        assert not median_profile.FAULT_PATH & set(c), c
    profile, link = median_profile.median_profile("h200", costs, "h200-median")
    assert profile == read("configs", "gpus", "h200-median.json")
    assert link == read("configs", "links", "h200-median-host.json")
    h100 = median_profile.instance_costs(median_profile.calibrated_campaigns("h100"))
    assert (median_profile.median_profile("h100", h100, "h100-median")[0]
            == read("configs", "gpus", "h100-median.json"))
    result = simulate(os.path.join(root, "traces", "real", "stream.fltrace"),
                             {"gpu": "h200-median", "capacity": {"fraction_of_footprint": 0.5},
                              "policy": {"name": "ondemand", "params": {}}}, faultline)
    assert result["results"]["total_time_ns"] > 0
    assert result["config"]["gpu"]["name"] == "h200-median"
    summary = read("experiments", "live", "reports", "median-profile", "h200", "summary.json")
    assert summary["instances"] == sorted(costs)
    assert summary["all"] == median_profile.overall(summary["campaigns"])
    assert {r["instance"] for r in summary["campaigns"]} <= set(costs)


if __name__ == "__main__":
    test_synthetic()
    test_committed(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "faultline"))
    print("median profile: ok")
