"""A campaign's manifest from what the GPU machine brought back: every TRACE-POLICY-BUDGET.err
beside the results becomes a refusal with its message (and the .err file goes), machine.txt
becomes the machine, and the revision, command and date are given here.

    experiments/campaign.sh manifest STUDY/data/CAMPAIGN --what TEXT --revision REV \\
        --command CMD [--date YYYY-MM-DD] [--gpu-profile h200] [--machine machine.txt]
        [--shipped-profile h200]

--gpu-profile is the profile the campaign's runs are simulated with: a name in configs/gpus/,
or, for a campaign that calibrated its own instance (`experiments/campaign.sh live`), the path of
that profile inside the folder (profile/gpus/NAME.json); --shipped-profile then names the
shipped profile of the GPU model, which the report also simulates with.

A campaign is immutable once committed: this refuses to overwrite a manifest.
"""
import argparse
import os
import sys

from lab.tables import write_json


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--what", required=True)
    ap.add_argument("--revision", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--date")
    ap.add_argument("--gpu-profile")
    ap.add_argument("--shipped-profile")
    ap.add_argument("--machine", help="default: FOLDER/machine.txt")
    ap.add_argument("--kind", default="measured")
    args = ap.parse_args(argv)
    path = os.path.join(args.folder, "manifest.json")
    if os.path.exists(path):
        sys.exit(f"{ap.prog}: {path} exists; a committed campaign is not rewritten")
    machine_path = args.machine or os.path.join(args.folder, "machine.txt")
    machine = []
    if os.path.exists(machine_path):
        with open(machine_path) as f:
            machine = [{"text": [line.rstrip("\n") for line in f if line.strip()]}]
    refusals, absorbed = [], []
    for name in sorted(os.listdir(args.folder)):
        if not name.endswith(".err"):
            continue
        trace, policy, budget = name[:-4].rsplit("-", 2)
        with open(os.path.join(args.folder, name)) as f:
            lines = f.read().strip().splitlines()
        refusals.append({"run": name[:-4] + ".json", "trace": f"traces/real/{trace}.fltrace",
                         "policy": policy, "budget": float(budget),
                         "message": lines[-1] if lines else "failed"})
        absorbed.append(os.path.join(args.folder, name))
    manifest = {"campaign": os.path.basename(os.path.normpath(args.folder)), "what": args.what,
                "kind": args.kind, "revision": args.revision, "date": args.date,
                "machine": machine, "command": args.command, "refusals": refusals}
    if args.gpu_profile:
        manifest["gpu_profile"] = args.gpu_profile
    if args.shipped_profile:
        manifest["shipped_profile"] = args.shipped_profile
    write_json(path, manifest)
    for p in absorbed + ([machine_path] if machine and not args.machine else []):
        os.unlink(p)
    print(f"{path}: {len(refusals)} refusals")
    return 0
