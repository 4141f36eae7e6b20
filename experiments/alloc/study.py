#!/usr/bin/env python3
"""How much do allocators fragment? GMLake's evaluation shape from the allocation traces captured
on the H200 (traces/alloc/): every trace through faultline's caching, expandable and GMLake
models (fragmentation and memory saved per model and technique), the models beside the live
allocators, the largest batch under 16 GiB, and the UM link (the shipped UM traces re-placed by
each model and simulated at one capacity).

    experiments/alloc/study.py [--write-reports]
        the simulations in out/alloc/, then the tables and figures in out/alloc/reports/ (with
        --write-reports: alloc/reports/)
    experiments/alloc/study.py figures OUT_DIR DATA_DIR REPORTS_DIR
        the tables and figures alone, from the study's simulations (OUT_DIR: sim/, limit/, um/)
        and the measured campaigns (DATA_DIR: alloc/data)"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab.alloc import figures, study  # noqa: E402

SUBCOMMANDS = {"figures": figures}

if __name__ == "__main__":
    sys.exit(steps.main_or_dispatch(__doc__, SUBCOMMANDS, study.main))
