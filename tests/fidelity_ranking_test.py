"""The fidelity report's reading of repeated live runs: the median run stands for its repeats, a
pair ordered differently is flagged, a tie in the simulator counts as a different order, and a
pair whose repeats on the GPU overlap is marked as one the GPU does not separate, and a group
whose every such pair is one the GPU does not separate is consistent with it; the byte errors
leave out runs that moved too little to give a ratio, count only runs that drained CUPTI's
records, and of those only runs whose counters conserve bytes. rank_spread.py's reading across
instances: a pair another instance's GPU orders the other way is within the GPU's spread, one no
other instance ran is not, and its counts agree with the report's own on the committed sets."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "experiments"))
from lab.live import (  # noqa: E402
    fidelity,
    rank_spread,
)


def write_run(directory, policy, seconds, repeat):
    doc = {"trace": {"path": "traces/real/t.fltrace"},
           "config": {"policy": {"name": policy}, "budget": {"fraction_of_footprint": 0.5},
                      "device": "test GPU"},
           "results": {"total_time_ns": int(seconds * 1e9)},
           "faultline": {"git_revision": "test"}}
    suffix = "" if repeat == 1 else f".r{repeat}"
    with open(os.path.join(directory, f"t-{policy}-0.5{suffix}.json"), "w") as f:
        json.dump(doc, f)


def row(run, sim_s):
    return {"trace": run["trace"], "budget": run["budget"], "policy": run["policy"],
            "live_s": run["live"]["total_time_ns"] / 1e9, "sim_s": sim_s,
            "live_repeats": len(run["repeats_s"]),
            "live_min_s": run["repeats_s"][0], "live_max_s": run["repeats_s"][-1],
            "by_repeat": run["by_repeat"]}


def csv_row(trace, budget, policy, live_s, sim_s, repeats=1, low=None, high=None):
    """A fidelity.csv row as csv.DictReader gives it: every field a string."""
    return {"trace": trace, "budget": str(budget), "policy": policy, "live_s": str(live_s),
            "sim_s": str(sim_s), "live_repeats": str(repeats),
            "live_min_s": str(low if low is not None else live_s),
            "live_max_s": str(high if high is not None else live_s)}


def check_rank_spread():
    mine = [csv_row("t", 0.5, "a", 1.0, 1.0), csv_row("t", 0.5, "b", 1.1, 0.9),  # swapped
            csv_row("t", 0.75, "a", 1.0, 1.0), csv_row("t", 0.75, "b", 2.0, 2.0),  # same
            csv_row("u", 0.5, "a", 1.0, 1.0), csv_row("u", 0.5, "b", 1.2, 1.0)]  # sim tie
    flip = [csv_row("t", 0.5, "a", 1.2, 1.0), csv_row("t", 0.5, "b", 1.0, 1.0),
            csv_row("u", 0.5, "a", 1.0, 1.0), csv_row("u", 0.5, "b", 1.1, 1.0)]
    groups = rank_spread.rank_spread(mine, {"other": flip, "third": flip})
    by = {(g["trace"], g["budget"]): g for g in groups}
    assert by[("t", 0.75)]["same"] and not by[("t", 0.75)]["pairs"]
    t = by[("t", 0.5)]["pairs"][0]
    assert t["pair"] == ["a", "b"] and not t["sim_tie"] and t["instances_against"] == 2
    assert t["within_gpu_spread"] and abs(t["live_gap"] - 0.1) < 1e-9
    u = by[("u", 0.5)]["pairs"][0]
    assert u["sim_tie"] and u["instances_agree"] == 2 and not u["within_gpu_spread"], u
    assert rank_spread.counts(groups) == {"rankings": 3, "rankings_same": 1,
                                          "rankings_within_gpu_spread": 2}
    # Alone, one run each: a swapped pair is beyond the spread; overlapping repeats are within.
    alone = rank_spread.rank_spread(mine[:2], {})
    assert not alone[0]["within_gpu_spread"]
    assert "no other instance ran both: beyond" in rank_spread.pair_text(alone[0],
                                                                          alone[0]["pairs"][0])
    repeated = [csv_row("t", 0.5, "a", 1.0, 1.0, 3, 0.9, 1.2),
                csv_row("t", 0.5, "b", 1.1, 0.9, 3, 1.0, 1.3)]
    assert rank_spread.rank_spread(repeated, {})[0]["within_gpu_spread"]
    # Untimed runs (drained) hold no live time: left out.
    assert rank_spread.rank_spread([dict(mine[0], live_s=""), mine[1]], {}) == []
    # The committed sets: the same count of groups ranked alike as the fidelity report's.
    from lab.live import results
    for gpu, c in results.CAMPAIGNS.items():
        for label, (campaign, groups) in results.gpu_rankings(c).items():
            summary = results.report(campaign)[0]
            counted = rank_spread.counts(groups)
            assert counted["rankings"] == summary["rankings"], (gpu, label)
            assert counted["rankings_same"] == summary["rankings_same"], (gpu, label)
            assert counted["rankings_within_gpu_spread"] >= summary[
                "rankings_consistent_with_gpu_spread"], (gpu, label)


def main():
    with tempfile.TemporaryDirectory() as d:
        for repeat, times in enumerate([(1.0, 2.0, 3.0), (1.2, 2.1, 3.9), (0.9, 1.9, 3.1)], 1):
            for policy, t in zip(["a", "b", "c"], times):
                write_run(d, policy, t, repeat)
        runs, refused = fidelity.read_live(d)
    assert not refused
    by_policy = {r["policy"]: r for r in runs}
    assert by_policy["a"]["live"]["total_time_ns"] == int(1.0e9), "the median repeat stands"
    assert by_policy["c"]["repeats_s"] == [3.0, 3.1, 3.9]
    # a < b < c on the GPU, a and b well apart. The simulator swaps b and c (their repeats
    # do not overlap: beyond the GPU's spread) and ties a with b.
    sims = {"a": 1.0, "b": 1.002, "c": 0.5}
    ranks = fidelity.rankings([row(by_policy[p], sims[p]) for p in "abc"])
    assert len(ranks) == 1 and not ranks[0]["same"]
    swapped = {tuple(s["pair"]): s for s in ranks[0]["swapped"]}
    assert set(swapped) == {("a", "b"), ("a", "c"), ("b", "c")}, swapped
    assert swapped[("a", "b")]["sim_tie"] and not swapped[("a", "b")]["repeats_overlap"]
    assert not swapped[("b", "c")]["sim_tie"] and not swapped[("b", "c")]["repeats_overlap"]
    assert ranks[0]["gpu_repeats_agree"], "every repeat orders a, b, c alike"
    assert ranks[0]["sim_text"] == "c, a = b", ranks[0]["sim_text"]
    assert not ranks[0]["consistent"], "the GPU separates pairs the simulator orders otherwise"
    # Overlapping repeats are marked so.
    sims = {"a": 2.5, "b": 2.0, "c": 3.0}
    close = dict(by_policy["b"], repeats_s=[0.95, 2.0, 2.1])
    ranks = fidelity.rankings([row(by_policy["a"], 2.5), row(close, 2.0), row(by_policy["c"], 3)])
    (pair,) = ranks[0]["swapped"]
    assert pair["pair"] == ["a", "b"] and pair["repeats_overlap"] and not pair["sim_tie"]
    assert ranks[0]["consistent"], "the only pair ordered differently is within the GPU's spread"
    # One run each: the GPU's spread is unknown, neither overlapping nor apart.
    single = [dict(row(by_policy[p], sims[p]), live_repeats=1) for p in "abc"]
    (pair,) = fidelity.rankings(single)[0]["swapped"]
    assert pair["repeats_overlap"] is None
    assert not fidelity.rankings(single)[0]["consistent"], "an unknown spread is not consistency"
    # Byte errors: |sim / live - 1| over the runs that moved at least 64 MB that way live and
    # drained CUPTI's records; the others' live bytes are lower bounds, counted apart.
    moved = [{"live_htod_gb": 2.0, "sim_htod_gb": 2.5, "live_dtoh_gb": 0.01, "sim_dtoh_gb": 1.0,
              "counters_drained": True, "bytes_conserved": True},
             {"live_htod_gb": 4.0, "sim_htod_gb": 3.0, "live_dtoh_gb": 1.0, "sim_dtoh_gb": 1.1,
              "counters_drained": True, "bytes_conserved": True},
             {"live_htod_gb": 1.0, "sim_htod_gb": 2.0, "live_dtoh_gb": 1.0, "sim_dtoh_gb": 3.0,
              "counters_drained": False, "bytes_conserved": None},
             # Drained, but its counters lost bytes to the GPU: compared only among all drained.
             {"live_htod_gb": 1.0, "sim_htod_gb": 1.5, "live_dtoh_gb": 1.0, "sim_dtoh_gb": 1.0,
              "counters_drained": True, "bytes_conserved": False}]
    assert fidelity.byte_errors(moved, "htod") == [0.25, 0.25]
    assert fidelity.byte_errors(moved, "htod", conserved_only=False) == [0.25, 0.25, 0.5]
    (dtoh,) = fidelity.byte_errors(moved, "dtoh")
    assert abs(dtoh - 0.1) < 1e-12, "the run that moved 10 MB back is left out"
    assert fidelity.byte_errors(moved, "dtoh", drained_runs=False) == [2.0]
    # Conservation: bytes back beyond bytes in, the trace's allocations, its host reads (a read
    # may leave a copy on both sides) and the run's discarded bytes are counters that lost bytes.
    stats = {"allocated_managed_bytes": 2_000, "host_read_bytes": 500}
    run = {"bytes_gpu_to_host": 10_000, "bytes_host_to_gpu": 7_000, "discarded_bytes": 400}
    assert fidelity.excess_bytes_back(run, stats) == 100
    assert fidelity.excess_bytes_back(dict(run, bytes_host_to_gpu=7_100), stats) == 0
    assert fidelity.excess_bytes_back({k: v for k, v in run.items() if k != "discarded_bytes"},
                                      stats) == 500, "a run without discards has none"
    sim = {"results": {"total_time_ns": 1, "bytes_host_to_gpu": 1, "bytes_gpu_to_host": 1,
                       "faults": 0}}
    live = {"trace": "t", "policy": "a", "budget": 0.5, "repeats_s": [1.0], "by_repeat": {},
            "drained": True, "live": {"total_time_ns": 1, "faults": 0, **run}}
    assert fidelity.row_of(live, sim, stats)["bytes_conserved"] is False
    assert fidelity.row_of(live, sim, dict(stats, host_read_bytes=600))["bytes_conserved"]
    assert fidelity.row_of(dict(live, drained=False), sim)["bytes_conserved"] is None
    # Drained: from the run's config, or the manifest's default for runs that predate the key.
    assert not fidelity.drained({"config": {}})
    assert fidelity.drained({"config": {"counters_drained": "after every kernel"}})
    assert not fidelity.drained({"config": {"counters_drained": "at step boundaries"}})
    assert fidelity.drained({"config": {}}, "around every eviction")
    check_rank_spread()
    print("fidelity ranking: ok")


if __name__ == "__main__":
    main()
