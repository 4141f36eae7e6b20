"""The simulator side of the live two-GPU harvest run (`experiments/papers/run.py huvm-peer-cost`,
lab/papers/peer_cost.py) on a tiny case: a campaign in live_harvest.sh's format whose "live" times
the simulator made with a hidden extra peer-migration cost; peer_cost must find that cost again from the `peer` run,
name the same winner as the campaign at it, and put the break-even where the simulated `peer`
and `preevict` times cross.

    python3 tests/huvm_peer_cost_test.py FAULTLINE
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "experiments"))
from lab.papers import peer_cost  # noqa: E402

VARIANTS = {"host": {"name": "ondemand", "params": {}},
            "preevict": {"name": "harvest",
                         "params": {"evict_to_peer": False, "multi_path_prefetch": False}},
            "peer": {"name": "harvest", "params": {"multi_path_prefetch": False}},
            "harvest": {"name": "harvest", "params": {}}}
HIDDEN_US = 600


def live_doc(trace, policy):
    """A result as `faultline replay` writes it, with what peer_cost reads."""
    return {"trace": {"path": trace},
            "config": {"budget": {"fraction_of_footprint": 0.5}, "device": "simulated (test)",
                       "peer_budget_bytes": 64 << 20, "peer_reserve_bytes": 2 << 20,
                       "policy": policy},
            "results": {}, "faultline": {"git_revision": "test"}}


def main():
    faultline = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        trace = os.path.join(work, "t.fltrace")
        subprocess.run([faultline, "synth", "--pattern", "dnn", "--footprint", "96M",
                        "--layers", "6", "--iterations", "2", "--out", trace],
                       check=True, capture_output=True)
        live = os.path.join(work, "live")
        os.makedirs(live)
        truth = {}
        for v, policy in VARIANTS.items():
            doc = live_doc(trace, policy)
            sim = peer_cost.simulate(faultline, doc, HIDDEN_US * 1000)
            assert sim["results"]["peers"]["bytes_to_peer"] > 0 or v in ("host", "preevict"), v
            doc["results"] = {"total_time_ns": sim["results"]["total_time_ns"]}
            truth[v] = sim["results"]["total_time_ns"] / 1e9
            with open(os.path.join(live, f"t-{v}-0.5.json"), "w") as f:
                json.dump(doc, f)
        out = os.path.join(work, "out")
        subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "papers", "run.py"),
                        "huvm-peer-cost", live, out, "--faultline", faultline,
                        "--extra-us", "0,200,400,800,1600"],
                       check=True, capture_output=True)
        with open(os.path.join(out, "peer_cost.json")) as f:
            (group,) = json.load(f)["groups"].values()
    curve = group["sim_s_by_extra_us"]["peer"]
    assert curve[-1][1] > curve[0][1], f"the peer variant does not slow with its cost: {curve}"
    fitted = group["fitted_extra_us"]
    assert fitted is not None and abs(fitted - HIDDEN_US) <= 0.15 * HIDDEN_US, \
        f"fitted {fitted} µs, hidden {HIDDEN_US} µs"
    assert group["winner_live"] == min(truth, key=truth.get)
    assert group["winner_sim_fitted"] == group["winner_live"], group
    preevict = group["sim_s_by_extra_us"]["preevict"][0][1]
    be = group["break_even_us"]
    if be is not None:  # below the break-even, peer beats preevict in the simulator; above, not
        below = [t for x, t in curve if x < be]
        above = [t for x, t in curve if x > be]
        assert all(t <= preevict for t in below) and all(t >= preevict for t in above), group
    print(f"huvm peer cost: fitted {fitted:.0f} µs (hidden {HIDDEN_US}), break-even {be}, "
          f"winner {group['winner_live']}")


if __name__ == "__main__":
    main()
