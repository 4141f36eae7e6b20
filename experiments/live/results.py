#!/usr/bin/env python3
"""How close is the simulator to the GPU, over every campaign? The results summary per GPU
model (experiments/live/results/GPU/): the shipped traces' and the hold-out sets' errors, each
instance with its own calibration, the shipped profile and the median of the others, the runs
beyond 15% with their causes, and the README with the headline.

    experiments/live/results.py [--write] [--list]

It reads the campaigns' fidelity reports (`experiments/live/fidelity.py report CAMPAIGN`) and the
calibration study's (`experiments/live/calibration.py`)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab.live import results  # noqa: E402

if __name__ == "__main__":
    sys.exit(results.main(prog="experiments/live/results.py"))
