"""Gathers each paper's claims (experiments/papers/*/claims.json, written by its run.sh, and any
claims-*.json beside it: the live runs' rows, written by their own reports) into
experiments/papers/claims.json: one list of {"paper", "claim", "paper_value", "our_value",
"setting", "command"} rows, papers in name order. Fails if a fragment is missing or a row lacks
a field, so the gathered list always holds every headline.

    python experiments/papers/claims.py
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
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


def main():
    rows = []
    for paper in PAPERS:
        path = os.path.join(HERE, paper, "claims.json")
        if not os.path.exists(path):
            sys.exit(f"claims: {path} is missing; run experiments/papers/{paper}/run.sh "
                     "--write-reports")
        for fragment in [path] + sorted(glob.glob(os.path.join(HERE, paper, "claims-*.json"))):
            rows += read_fragment(fragment)
    extra = sorted(set(os.path.basename(os.path.dirname(p))
                       for p in glob.glob(os.path.join(HERE, "*", "claims.json"))) - set(PAPERS))
    if extra:
        sys.exit(f"claims: papers not gathered: {', '.join(extra)}; add them to PAPERS")
    with open(os.path.join(HERE, "claims.json"), "w") as f:
        json.dump(rows, f, indent=2)
        f.write("\n")
    print(f"claims: {len(rows)} rows from {len(PAPERS)} papers")


if __name__ == "__main__":
    main()
