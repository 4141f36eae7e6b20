"""experiments/lab/live/cost_swap.py, pooled_cost.py and calibration_noise.py: a profile's costs (the host link's among
them), the median of the other instances' values (bandwidth curves per point, none where their
sizes differ), a profile with some costs changed and the originals left as they were, and end
to end on a real campaign: unchanged costs simulate as its report did, a dearer swap slower; the
pooled value of a cost; the text of the cost that carries a miss; each cost's spread within one
instance and across, on the committed calibrations, without the costs kept from the shipped
profile, and a calibration that cannot be refitted named."""
import os
import re
import sys
import tempfile

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import (  # noqa: E402
    calibration_noise,
    cost_swap,
    misses,
    pooled_cost,
    results,
)

FAULTLINE = os.path.join(root, "build", "faultline")
CAMPAIGN = "h200-47aad059-holdout"  # six hash-join runs: quick to simulate
GPU = {"name": "x", "host_link": "x-host", "per_fault_ns": 5000, "fault_parallelism": 256,
       "memory_bytes": 1 << 30, "swap_extra_ns": 30000, "sources": ["a"]}
LINK = {"name": "x-host", "forward": {"bandwidth_gbps": [[1 << 30, 50.0]], "overhead_ns": 9000},
        "reverse": {"bandwidth_gbps": [[1 << 30, 14.0]], "overhead_ns": 9000}}


def test_costs():
    c = cost_swap.costs(GPU, LINK)
    assert c["per_fault_ns"] == 5000 and c["swap_extra_ns"] == 30000
    assert "memory_bytes" not in c and "name" not in c and "sources" not in c
    assert c["host_link.reverse.bandwidth_gbps"] == [[1 << 30, 14.0]]
    assert c["host_link.forward.overhead_ns"] == 9000


def test_median_cost():
    assert cost_swap.median_cost([1000, 3000, 2500]) == 2500
    assert cost_swap.median_cost([1000, 2000]) == 1500 and \
        isinstance(cost_swap.median_cost([1000, 2001]), int)
    curves = [[[1, 10.0], [2, 20.0]], [[1, 12.0], [2, 18.0]], [[1, 14.0], [2, 30.0]]]
    assert cost_swap.median_cost(curves) == [[1, 12.0], [2, 20.0]]
    assert cost_swap.median_cost([[[1, 10.0]], [[2, 10.0]]]) is None


def test_with_costs():
    import json
    with tempfile.TemporaryDirectory() as d:
        paths = cost_swap.with_costs(GPU, LINK, {"swap_extra_ns": 0,
                                                 "host_link.reverse.bandwidth_gbps": [[1, 9.0]]}, d)
        with open(paths["gpu"]) as f:
            gpu = json.load(f)
        with open(paths["host_link"]) as f:
            link = json.load(f)
    assert gpu["swap_extra_ns"] == 0 and gpu["per_fault_ns"] == 5000
    assert link["reverse"]["bandwidth_gbps"] == [[1, 9.0]] and link["forward"] == LINK["forward"]
    assert GPU["swap_extra_ns"] == 30000 and LINK["reverse"]["bandwidth_gbps"][0][1] == 14.0


def test_swap_text():
    run = {"swaps": [{"cost": "swap_extra_ns", "here": 76388, "others": 6486, "time_error": 0.05,
                      "closes": 0.78}]}
    text = misses.swap_text(run)
    assert text == ("carried by swap_extra 76.4 us here, 6.5 us on the others: at theirs +5% "
                    "(78% of the miss)"), text
    # Under half of the miss closed: no one cost carries it, and where every cost leaves it.
    weak = {"swaps": [{**run["swaps"][0], "closes": 0.19}],
            "every_cost_at_others": {"time_error": 0.14}}
    assert misses.swap_text(weak) == (
        "no one cost carries it (swap_extra 76.4 us here, 6.5 us on the others closes at most "
        "19% of it); every cost at the others' median: +14%"), misses.swap_text(weak)
    assert "at most 0% of it" in misses.swap_text({**weak, "swaps": [{**weak["swaps"][0],
                                                                       "closes": -0.3}]})
    assert "no cost differs" in misses.swap_text({**weak, "swaps": []})
    assert misses.swap_text(None) is None
    count = {"cost": "fault_parallelism", "here": 513, "others": 256}
    assert misses.cost_text(count) == "fault_parallelism 513 here, 256 on the others"
    curve = {"cost": "host_link.reverse.bandwidth_gbps", "here": [[1, 13.0]],
             "others": [[1, 17.1]]}
    assert misses.cost_text(curve) == \
        "host_link.reverse.bandwidth 13.0 GB/s here, 17.1 GB/s on the others"


def test_shipped_value():
    assert pooled_cost.shipped_value("h200", "swap_extra_ns") > 0
    try:
        pooled_cost.shipped_value("h200", "swap_extra")
        raise AssertionError("taken: an unknown cost")
    except SystemExit as e:
        assert "no cost swap_extra; expected one of" in str(e) and "swap_extra_ns" in str(e)
        assert "host_link.reverse.bandwidth_gbps" in str(e)


def test_bad_files():
    """A missing or malformed report is named, with what was expected."""
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "h200.json")
        with open(bad, "w") as f:
            f.write("{not json")
        for call, message in ((lambda: misses.load_swaps(bad), "not JSON"),
                              (lambda: cost_swap.report_profile("h200-nowhere"),
                               "h200-nowhere/summary.json: No such file")):
            try:
                call()
                raise AssertionError(f"taken: {message}")
            except SystemExit as e:
                assert message in str(e), str(e)
        with open(bad, "w") as f:
            f.write('{"runs": [{"campaign": "x"}]}')
        try:
            misses.load_swaps(bad)
            raise AssertionError("taken: a run without its keys")
        except SystemExit as e:
            assert f"{bad}: expected cost_swap.py's report" in str(e), str(e)


def test_real_campaign():
    """Unchanged costs simulate as the report did; a dearer swap makes pump slower."""
    gpu, link = cost_swap.report_profile(CAMPAIGN)
    own = cost_swap.costs(gpu, link)["swap_extra_ns"]
    rows = {(r["policy"], float(r["budget"])): float(r["sim_s"])
            for r in results.report(CAMPAIGN)[1]}
    with tempfile.TemporaryDirectory() as d:
        same = pooled_cost.campaign_runs(CAMPAIGN, ["pump"], "swap_extra_ns", own, FAULTLINE, 2, d)
        dear = pooled_cost.campaign_runs(CAMPAIGN, ["pump"], "swap_extra_ns", own + 200_000,
                                         FAULTLINE, 2, d)
    assert len(same) == 2
    for trace, policy, budget, live, _sim, pooled, revision in same:
        assert trace == "hash-join" and policy == "pump" and live > 0
        assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", revision), revision
        # simulated afresh at the campaign's own value: its report's time, to the nanosecond
        assert abs(pooled - rows[(policy, budget)]) < 1e-9, (pooled, rows[(policy, budget)])
    for (_, _, _, _, sim, pooled, _) in dear:
        assert pooled > sim * 1.05, (pooled, sim)
    # a campaign whose report used a shipped profile has no own value to pool
    assert not cost_swap.calibrated("h200-other-instance")
    assert pooled_cost.campaign_runs("h200-other-instance", [], "swap_extra_ns", own, FAULTLINE,
                                     2, "unused") == []
    with tempfile.TemporaryDirectory() as d:  # only the traces asked for
        assert pooled_cost.campaign_runs(CAMPAIGN, ["pump"], "swap_extra_ns", own, FAULTLINE, 2, d,
                                         ("strided",)) == []
    doc = {"cost": "swap_extra_ns", "value": 5, "policies": ["pump"], "traces": ["hash-join"],
           "gpus": {"h200": {"value": 5, "sets": {"s": {"campaigns": 1, **pooled_cost.medians(
               same)}}, "campaigns": {CAMPAIGN: {"runs": [dict(zip(
                   ("trace", "policy", "budget", "live_s", "sim_s", "pooled_s"), r[:6]))
                   for r in same]}}}}}
    text = pooled_cost.markdown(doc)
    assert "--value 5 --policies pump --traces hash-join --write" in text, text
    assert f"| h200 | `{CAMPAIGN}` | hash-join pump 75% |" in text
    # Without --traces a campaign holds medians() alone, its "runs" a count: no run is listed.
    doc["gpus"]["h200"]["campaigns"] = {CAMPAIGN: pooled_cost.medians(same)}
    del doc["traces"]
    text = pooled_cost.markdown(doc)
    assert "| h200 | s | 5 | 1 | 2 |" in text and "hash-join pump 75%" not in text, text
    summary = pooled_cost.medians(same)
    assert summary["runs"] == 2
    assert summary["own_median_abs_time_error"] == summary["pooled_median_abs_time_error"]


def test_calibration_noise():
    assert calibration_noise.cv([2.0, 2.0]) == 0 and calibration_noise.cv([5]) is None
    assert calibration_noise.cv([0, 0]) is None
    assert abs(calibration_noise.cv([1, 3]) - 2 ** 0.5 / 2) < 1e-12
    assert calibration_noise.scalar([[1, 12.5], [2, 13.0]]) == 12.5
    at1 = os.path.join(root, "experiments", "live", "data", "h200-153bc426", "profile",
                       "calibration", "h200-153bc426-at1.json")
    kept = calibration_noise.kept_costs(at1)
    assert {"per_fault_ns", "host_link.reverse.overhead_ns"} <= kept and "profile" not in kept
    doc = calibration_noise.noise("h200", FAULTLINE)
    assert doc["campaigns"]["h200-9bc851db-drift"] == 6
    by = {r["cost"]: r for r in doc["costs"]}
    assert not kept & set(by) and by["swap_extra_ns"]["within"] > 0
    assert by["host_fault_ns"]["instances"] == len(results.CAMPAIGNS["h200"]["instances"])
    # One instance's calibrations at 15 repeats: each cost's spread and values, without the
    # kept fault path and the costs no calibration measured (the base profile's peer costs).
    r15 = os.path.join(root, "experiments", "live", "data", "h200-1f2ea222-calibrations", "r15",
                       "calibration")
    table = calibration_noise.spread_table(
        [os.path.join(r15, f"h200-1f2ea222-r15-{k}.json") for k in range(1, 5)], "h200",
        FAULTLINE)
    assert "| discarded_fault_ns | 3% | 80.1 us, 77.8 us, 83.1 us, 83.1 us |" in table, table
    assert "peer_eviction_ns" not in table and "per_fault_ns" not in table
    assert doc["campaigns"]["h200-1f2ea222-calibrations"] == 4  # at1-at4, not the r15 ones
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "x-at1.json")
        with open(bad, "w") as f:
            f.write("{}")
        try:
            calibration_noise.refit_alone(FAULTLINE, bad, "h200", d)
            raise AssertionError("taken: a calibration without measurements")
        except SystemExit as e:
            assert f"calibration_noise: faultline calibrate --refit {bad}" in str(e), str(e)


if __name__ == "__main__":
    test_costs()
    test_median_cost()
    test_with_costs()
    test_swap_text()
    test_shipped_value()
    test_bad_files()
    test_real_campaign()
    test_calibration_noise()
    print("cost swap: ok")
