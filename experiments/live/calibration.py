#!/usr/bin/env python3
"""How much does a GPU's calibration move, and which costs carry the misses? The calibration
study over every calibrated instance: each cost's noise within one instance and across, the
drift between passes of one campaign, one profile for any instance (the median), a cost pooled
over the instances, and the cost that carries each miss.

    experiments/live/calibration.py SUBCOMMAND ...   (SUBCOMMAND --help for its arguments)

It reads the campaigns' data and fidelity reports (`experiments/live/fidelity.py report`);
`experiments/make_reports.sh live` runs it as the committed reports need."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import cli  # noqa: E402
from lab.live import calibration_noise, cost_swap, drift, median_profile, pooled_cost  # noqa: E402

SUBCOMMANDS = {
    "noise": (calibration_noise.main, "each per-machine cost's variation between calibrations of "
                                      "one instance and across instances"),
    "drift": (drift.main, "a campaign made in passes: every run simulated with each pass's "
                          "calibration and with all combined"),
    "median-profile": (median_profile.main, "configs/gpus/GPU-median.json from the calibrated "
                                            "instances; --evaluate: each campaign with the others' "
                                            "median"),
    "pooled-cost": (pooled_cost.main, "every campaign simulated with one cost at one value for "
                                      "every instance"),
    "cost-swap": (cost_swap.main, "each miss lying in its calibration simulated with each cost "
                                  "swapped for the other instances' median"),
}

if __name__ == "__main__":
    sys.exit(cli.dispatch(__doc__, SUBCOMMANDS))
