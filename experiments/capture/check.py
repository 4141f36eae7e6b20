#!/usr/bin/env python3
"""Does a capture hold what the program did, and what does it cost? The checks of captured
traces against the programs they came from: the capture's cost beside the program alone, each
trace's steps simulated at its whole footprint against the program's own, and access sets against
what a microbenchmark declared, against another capture, or a sanitize capture against a CUPTI
one.

    experiments/capture/check.py SUBCOMMAND ...     (SUBCOMMAND --help for its arguments)

The captures and run logs come from `experiments/campaign.sh capture` on the GPU machine."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab import cli  # noqa: E402
from lab.capture import access, explain, micro, overhead, timeline  # noqa: E402

SUBCOMMANDS = {"overhead": overhead, "timeline": timeline, "micro": micro, "access": access,
               "explain": explain}

if __name__ == "__main__":
    sys.exit(cli.dispatch(__doc__, SUBCOMMANDS))
