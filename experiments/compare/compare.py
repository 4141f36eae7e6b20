#!/usr/bin/env python3
"""Which policy wins, and by how much? The policy comparison in the simulator: every policy (with
DeepUM's ablation) x every real trace x capacity {100, 80, 67, 50, 33}% of the footprint, 5
training steps each (configs/sweeps/real-traces.json), each run beside `faultline bound`, its
lower bound. Fails if a run beats its lower bound; names the online runs faster than the oracle.

    experiments/compare/compare.py [--write-reports]
        the sweep, then the table and figures in out/compare/; with --write-reports also the
        table into compare/reports/comparison.md
    experiments/compare/compare.py table RESULTS_JSON OUT_DIR
        the table and figures alone, from a sweep's results.json"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab import compare  # noqa: E402

SUBCOMMANDS = {"table": compare}

if __name__ == "__main__":
    sys.exit(steps.main_or_dispatch(__doc__, SUBCOMMANDS, compare.run))
