"""Each paper's evaluation regenerated in the simulator, the paper's numbers beside ours, then every
headline gathered (`experiments/papers/run.py [PAPER...] [--write-reports] [--jobs N]`).

Each paper's run() does, from the repository root, what its shell script did: its sweeps
(configs/sweeps/PAPER-*.json, on N threads with --jobs), its synthetic traces or simulations, then
its report: into out/papers/PAPER/ and out/papers/PAPER/claims.json, or with --write-reports into
experiments/papers/PAPER/reports/ and experiments/papers/PAPER/claims.json. Then claims.gather():
experiments/papers/claims.json with --write-reports, else out/papers/claims.json (the papers run
now read from out/, the others from their committed claims).
"""
import argparse

from lab import steps
from lab.papers import claims, deepum, gmlake, huvm, pump, schedule

PAPERS = {"deepum": deepum.run, "gmlake": gmlake.run, "huvm": huvm.run, "pump": pump.run,
          "schedule": schedule.run}


def places(paper, write_reports):
    """(reports folder, claims.json) of PAPER from the repository root: its committed ones with
    WRITE_REPORTS, else out/papers/PAPER/ and the claims in it."""
    if write_reports:
        return f"experiments/papers/{paper}/reports", f"experiments/papers/{paper}/claims.json"
    return f"out/papers/{paper}", f"out/papers/{paper}/claims.json"


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(
        prog=prog, description="Each paper's evaluation in the simulator beside the paper's "
        "numbers, then every headline gathered into claims.json.")
    ap.add_argument("papers", nargs="*", metavar="PAPER",
                    help=f"of {', '.join(PAPERS)} (default: all, in that order)")
    ap.add_argument("--write-reports", action="store_true",
                    help="into experiments/papers/PAPER/reports/ and claims.json, not out/")
    ap.add_argument("--jobs", type=int, metavar="N", help="the sweeps on N threads")
    args = ap.parse_args(argv)
    unknown = [p for p in args.papers if p not in PAPERS]
    if unknown:
        ap.error(f"unknown paper {', '.join(unknown)}; expected some of {', '.join(PAPERS)}")
    sweep_args = ["--jobs", str(args.jobs)] if args.jobs is not None else []
    fresh = {}
    for paper in dict.fromkeys(args.papers or PAPERS):
        steps.in_repository(paper)
        out, claims_path = places(paper, args.write_reports)
        PAPERS[paper](out, claims_path, args.write_reports, sweep_args)
        fresh[paper] = claims_path
    if args.write_reports:
        claims.gather()
    else:
        claims.gather(fresh, "out/papers/claims.json")
