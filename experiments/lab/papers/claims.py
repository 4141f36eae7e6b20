"""Gathers each paper's claims (experiments/papers/*/claims.json, written by `run.py PAPER
--write-reports`, and any claims-*.json beside it: the live runs' rows, written by their own
reports) into experiments/papers/claims.json: one list of {"paper", "claim", "paper_value",
"our_value", "setting", "command"} rows, papers in name order. Fails if a fragment is missing or a
row lacks a field, so the gathered list always holds every headline.

    experiments/papers/run.py claims

`run.py PAPER...` gathers after its runs; without --write-reports it takes each paper it ran from
out/papers/PAPER/claims.json and writes the list into out/papers/claims.json (gather()).
"""
import argparse
import glob
import json
import os
import sys

from lab.paths import EXPERIMENTS
from lab.tables import write_json

SUMMARY = "gathers every papers/*/claims.json and claims-*.json into papers/claims.json"

HERE = os.path.join(EXPERIMENTS, "papers")
PAPERS = ["deepum", "gmlake", "huvm", "pump", "schedule"]
FIELDS = ["paper", "claim", "paper_value", "our_value", "setting", "command"]


def read_fragment(path):
    rows = []
    for i, row in enumerate(json.load(open(path))):
        missing = [f for f in FIELDS if f not in row]
        if missing:
            sys.exit(f"claims: {path}: row {i} lacks {', '.join(missing)}")
        rows.append({f: row[f] for f in FIELDS})
    return rows


def gather(fresh=None, path=None):
    """Every paper's rows into PATH (default experiments/papers/claims.json); FRESH: paper -> a
    claims.json to read instead of the committed experiments/papers/PAPER/claims.json (a run
    written into out/). Returns the rows."""
    fresh = fresh or {}
    rows = []
    for paper in PAPERS:
        main_claims = fresh.get(paper, os.path.join(HERE, paper, "claims.json"))
        if not os.path.exists(main_claims):
            sys.exit(f"claims: {main_claims} is missing; run experiments/papers/run.py {paper} "
                     "--write-reports")
        live = sorted(glob.glob(os.path.join(HERE, paper, "claims-*.json")))
        for fragment in [main_claims] + live:
            rows += read_fragment(fragment)
    extra = sorted(set(os.path.basename(os.path.dirname(p))
                       for p in glob.glob(os.path.join(HERE, "*", "claims.json"))) - set(PAPERS))
    if extra:
        sys.exit(f"claims: papers not gathered: {', '.join(extra)}; add them to PAPERS")
    write_json(path or os.path.join(HERE, "claims.json"), rows)
    print(f"claims: {len(rows)} rows from {len(PAPERS)} papers")
    return rows


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description="Gathers every papers/*/claims.json and "
                                 "claims-*.json into experiments/papers/claims.json.")
    ap.parse_args(argv)
    gather()
