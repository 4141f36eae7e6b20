#!/usr/bin/env python3
"""What does the GPU run in a campaign? The programs of the GPU campaigns, on the GPU machine:
the PyTorch training and graph workloads that `faultline capture` records (the shipped traces of
traces/real/ and the hold-out programs), and the allocator study's training jobs with their
allocator's numbers and memory snapshots.

    experiments/workloads.py SUBCOMMAND ...     (SUBCOMMAND --help for its arguments)

`experiments/campaign.sh` runs them (capture, capture-*, alloc-*); each also runs alone, e.g.
`faultline capture --torch --range profiler -- python3 experiments/workloads.py train resnet50`.
torch is imported only once a subcommand runs (the allocator study chooses its allocator first)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab import cli  # noqa: E402
from lab.workloads import alloc, train  # noqa: E402

SUBCOMMANDS = {"train": train, "alloc": alloc}

# Guarded: the allocator study's two-GPU runs spawn processes that import this file again.
if __name__ == "__main__":
    sys.exit(cli.dispatch(__doc__, SUBCOMMANDS))
