"""experiments/lab/multigpu/live_vs_sim.py without the simulator: repeats of a variant reduce to the
median run with its spread kept, the variant is read from the policy and its parameters, and the
winner counts as matched when the simulator's pick is within the live repeats' spread of the
live winner."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "experiments"))
from lab.campaigns import median_of_repeats  # noqa: E402
from lab.multigpu import live_vs_sim  # noqa: E402


def run(variant_params, seconds, repeat):
    policy, params = variant_params
    return {"trace": "t", "budget": 0.5, "policy": policy, "params": params, "repeat": repeat,
            "results": {"total_time_ns": int(seconds * 1e9)}}


VARIANTS = {"host": ("ondemand", {}),
            "preevict": ("harvest", {"evict_to_peer": False, "multi_path_prefetch": False}),
            "peer": ("harvest", {"multi_path_prefetch": False}),
            "harvest": ("harvest", {})}

for name, vp in VARIANTS.items():
    assert live_vs_sim.variant(run(vp, 1, 1)) == name, name

runs = [run(VARIANTS["peer"], s, i + 1) for i, s in enumerate([14.0, 12.0, 13.0])]
runs += [run(VARIANTS["harvest"], s, i + 1) for i, s in enumerate([12.5, 16.0])]
for r in runs:
    r["variant"] = live_vs_sim.variant(r)
medians = {r["variant"]: r for r in median_of_repeats(runs, key=("trace", "variant",
                                                                        "budget"))}
assert medians["peer"]["results"]["total_time_ns"] == 13e9, medians["peer"]
assert medians["peer"]["repeats_s"] == [12.0, 13.0, 14.0]
assert medians["harvest"]["results"]["total_time_ns"] == 12.5e9  # the lower middle of two

group = [{"live_s": 13.0, "sim_s": 11.0, "live_repeats_s": [12.0, 13.0, 14.0]},
         {"live_s": 12.5, "sim_s": 12.0, "live_repeats_s": [12.5, 16.0]}]
# Live picks the second (12.5 s), the simulator the first, whose fastest repeat (12.0 s) is
# within the second's spread: consistent.
assert live_vs_sim.within_spread(group)
group[0]["live_repeats_s"] = [17.0]
group[0]["live_s"] = 17.0
assert not live_vs_sim.within_spread(group)
print("live_vs_sim: ok")
