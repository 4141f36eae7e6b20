#!/usr/bin/env python3
"""Why does a run miss? The per-kernel diagnosis of live runs against their simulations: each
kernel's time and fault cost on both sides, the simulated kernel split into evictions, stall and
compute, the replay's migration calls, each run at the eviction price its own call log shows,
and the probes' cases.

    experiments/live/diagnose.py SUBCOMMAND ...     (SUBCOMMAND --help for its arguments)

The runs come from `experiments/campaign.sh` (`replay` with PER_KERNEL=1 or CALL_LOG=1, the
probes); `experiments/live/fidelity.py` says which runs miss."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import cli  # noqa: E402
from lab.live import (  # noqa: E402
    call_costs,
    call_log,
    eviction_level,
    fault_cases,
    fault_cost_by_kernel,
    run_priced,
    stall_split,
)
from lab.multigpu import prefetch_split  # noqa: E402

SUBCOMMANDS = {
    "kernels": (fault_cost_by_kernel.main, "per-kernel replays against the simulation of the same "
                                           "run, kernels bucketed by their faults"),
    "stall-split": (stall_split.main, "each simulated kernel split into evictions, stall and "
                                      "compute, the live times fitted as a mix of the three"),
    "calls": (call_costs.main, "per run, each kind of migration call's count, bytes and CPU time"),
    "call-log": (call_log.main, "a replay's call log: per kind of call, the queue, the swaps, "
                                "each eviction against the simulator's"),
    "priced": (run_priced.main, "each run of a campaign with call logs simulated at the eviction "
                                "price it met"),
    "fault-cases": (fault_cases.main, "the fault_shape probe's cases, live against simulated per "
                                      "block"),
    "eviction-level": (eviction_level.main, "the eviction_level probe's rounds, split by level"),
    "prefetch-split": (prefetch_split.main, "a two-GPU campaign's prefetched bytes by source, "
                                            "live against simulated"),
}

if __name__ == "__main__":
    sys.exit(cli.dispatch(__doc__, SUBCOMMANDS))
