"""A run config for simulating a trace and its re-placed copies at one capacity: the default
config (configs/runs/default.json) with the capacity fixed in bytes to FRACTION of the ORIGINAL
trace's footprint, so that every layout gets the same GPU memory (the allocator study's UM link).

    from lab.alloc.um_config import um_config
    config = um_config("traces/real/gpt2-small.fltrace", 0.5)
"""
import json
import os

from lab.paths import REPO
from lab.sim import trace_stats


def um_config(trace, fraction):
    """configs/runs/default.json with the capacity FRACTION of TRACE's footprint, in bytes (whole
    2 MB chunks)."""
    stats = trace_stats(trace)
    with open(os.path.join(REPO, "configs", "runs", "default.json")) as f:
        config = json.load(f)
    chunk = 2 << 20
    capacity = int(stats["footprint_bytes"] * fraction) // chunk * chunk
    config["description"] = (f"configs/runs/default.json with the capacity fixed at {fraction:g} "
                             f"of {os.path.basename(trace)}'s footprint ({capacity} bytes)")
    config["capacity"] = {"bytes": capacity}
    return config


def write(trace, fraction, path):
    """um_config(TRACE, FRACTION) as a JSON file at PATH."""
    with open(path, "w") as f:
        f.write(json.dumps(um_config(trace, fraction), indent=2) + "\n")
