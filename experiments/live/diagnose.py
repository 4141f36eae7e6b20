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
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab import cli  # noqa: E402
from lab.live import call_costs, call_log, eviction_level, fault_cases, fault_cost_by_kernel, run_priced, stall_split  # noqa: E402
from lab.multigpu import prefetch_split  # noqa: E402

SUBCOMMANDS = {"kernels": fault_cost_by_kernel, "stall-split": stall_split, "calls": call_costs,
               "call-log": call_log, "priced": run_priced, "fault-cases": fault_cases,
               "eviction-level": eviction_level, "prefetch-split": prefetch_split}

if __name__ == "__main__":
    sys.exit(cli.dispatch(__doc__, SUBCOMMANDS))
