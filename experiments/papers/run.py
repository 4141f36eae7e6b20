#!/usr/bin/env python3
"""Do the papers' claims hold here? Each paper the project builds on (DeepUM, PUMP, HUVM, GMLake)
and our own policy (schedule): its evaluation regenerated in the simulator, the paper's published
numbers beside ours, and every headline gathered into experiments/papers/claims.json.

    experiments/papers/run.py [PAPER...] [--write-reports] [--jobs N]
        PAPER: deepum gmlake huvm pump schedule (default: all, in that order). Each runs its
        sweeps (on N threads), its report into out/papers/PAPER/ (with --write-reports:
        papers/PAPER/reports/ and papers/PAPER/claims.json), then the claims are gathered
        (out/papers/claims.json, or papers/claims.json with --write-reports)
    experiments/papers/run.py SUB ARGS...      one part alone (SUB --help for its options)

What each paper found, and how far ours is from it: papers/PAPER/README.md."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from lab import steps  # noqa: E402

steps.in_venv()  # the studies' packages (matplotlib) are in the repository's .venv
from lab.papers import (  # noqa: E402
    claims,
    deepum,
    gmlake,
    gmlake_fsdp,
    huvm,
    huvm_live,
    peer_cost,
    pump,
    runner,
    schedule,
)

SUBCOMMANDS = {"claims": claims, "deepum-report": deepum, "gmlake-report": gmlake,
               "huvm-report": huvm, "pump-report": pump, "schedule-report": schedule,
               "huvm-live": huvm_live, "huvm-peer-cost": peer_cost, "gmlake-fsdp": gmlake_fsdp}

if __name__ == "__main__":
    sys.exit(steps.main_or_dispatch(__doc__, SUBCOMMANDS, runner.main))
