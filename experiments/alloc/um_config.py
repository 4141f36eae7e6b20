"""Prints a run config for simulating a trace and its re-placed copies at one capacity: the
default config (configs/runs/default.json) with the capacity fixed in bytes to FRACTION of the
ORIGINAL trace's footprint, so that every layout gets the same GPU memory.
    python3 experiments/alloc/um_config.py TRACE FRACTION > config.json
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab.paths import REPO  # noqa: E402
from lab.sim import trace_stats  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    trace, fraction = sys.argv[1], float(sys.argv[2])
    stats = trace_stats(trace)
    with open(os.path.join(REPO, "configs", "runs", "default.json")) as f:
        config = json.load(f)
    chunk = 2 << 20
    capacity = int(stats["footprint_bytes"] * fraction) // chunk * chunk
    config["description"] = (f"configs/runs/default.json with the capacity fixed at {fraction:g} "
                             f"of {os.path.basename(trace)}'s footprint ({capacity} bytes)")
    config["capacity"] = {"bytes": capacity}
    print(json.dumps(config, indent=2))


if __name__ == "__main__":
    main()
