"""experiments/'s layout: every campaign (STUDY/data/CAMPAIGN/) has a manifest.json with its
revision, machine, command and refusals; no bare .err file is left beside the results; and every
live result a campaign holds reads through load_runs (trace, policy and budget from the
result itself)."""
import glob
import json
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.campaigns import load_runs  # noqa: E402


def main():
    campaigns = sorted(glob.glob(os.path.join(root, "experiments", "*", "data", "*", "")))
    assert campaigns, "no campaigns under experiments/*/data/"
    problems = []
    for folder in campaigns:
        path = os.path.join(folder, "manifest.json")
        if not os.path.exists(path):
            problems.append(f"{folder}: no manifest.json")
            continue
        with open(path) as f:
            manifest = json.load(f)
        for key in ("revision", "machine", "command", "refusals"):
            if key not in manifest:
                problems.append(f"{path}: no {key}")
        for refusal in manifest.get("refusals", []):
            if not refusal.get("message"):
                problems.append(f"{path}: a refusal without its message: {refusal}")
        problems += [f"{p}: a bare .err file (`experiments/campaign.sh manifest` turns it into a refusal)"
                     for p in glob.glob(os.path.join(folder, "*.err"))]
    for folder in glob.glob(os.path.join(root, "experiments", "live", "data", "*", "")):
        for run in load_runs(folder):
            if not run["policy"] or run["budget"] is None:
                problems.append(f"{run['path']}: no policy or budget in the result")
    assert not problems, "\n".join(problems)
    print(f"experiments layout: {len(campaigns)} campaigns ok")


if __name__ == "__main__":
    main()
