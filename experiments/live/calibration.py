#!/usr/bin/env python3
"""How much does a GPU's calibration move, and which costs carry the misses? The calibration
study over every calibrated instance: each cost's noise within one instance and across, the
drift between passes of one campaign, one profile for any instance (the median), a cost pooled
over the instances, the cost that carries each miss, and which of the host's two states each
calibration met, and what an eviction costs inside the programs against the calibration's
prices.

    experiments/live/calibration.py SUBCOMMAND ...   (SUBCOMMAND --help for its arguments)

It reads the campaigns' data and fidelity reports (`experiments/live/fidelity.py report`);
`experiments/make_reports.sh live` runs it as the committed reports need."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab import cli  # noqa: E402
from lab.live import (  # noqa: E402
    calibration_noise,
    calibration_states,
    cost_swap,
    drift,
    eviction_prices,
    median_profile,
    pooled_cost,
)

SUBCOMMANDS = {"noise": calibration_noise, "drift": drift, "median-profile": median_profile,
               "pooled-cost": pooled_cost, "cost-swap": cost_swap, "states": calibration_states,
               "evictions": eviction_prices}

if __name__ == "__main__":
    sys.exit(cli.dispatch(__doc__, SUBCOMMANDS))
