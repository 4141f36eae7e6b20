#!/usr/bin/env python3
"""How close is the simulator to the GPU? The fidelity report of a campaign: every live run
simulated on the same trace, policy and budget with the profile of the GPU it ran on, against
the live time, faults and bytes; the table, the figure and the summary.

    experiments/live/fidelity.py report [CAMPAIGN] [--write-reports]
    experiments/live/fidelity.py two-gpu [CAMPAIGN] [--write-reports]
    experiments/live/fidelity.py simulate LIVE_DIR OUT_DIR [--gpu PROFILE] [--faultline BIN]
    experiments/live/fidelity.py program [CAMPAIGN] [--write-reports]
    experiments/live/fidelity.py kernels CAMPAIGN [--write-reports]

The headline over every campaign is `experiments/live/results.py`; a campaign is made on the GPU
machine by `experiments/campaign.sh live`."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab import cli  # noqa: E402
from lab.live import fidelity, fidelity_campaign, kernels, program  # noqa: E402
from lab.multigpu import live_vs_sim  # noqa: E402

SUBCOMMANDS = {"report": fidelity_campaign.ONE_GPU, "two-gpu": fidelity_campaign.TWO_GPU,
               "simulate": fidelity, "simulate-two-gpu": live_vs_sim, "program": program,
               "kernels": kernels}

if __name__ == "__main__":
    sys.exit(cli.dispatch(__doc__, SUBCOMMANDS))
