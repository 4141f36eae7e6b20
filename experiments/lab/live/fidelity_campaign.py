"""The fidelity report of a named campaign, with every profile its manifest calls for.

A campaign of replays on one GPU (experiments/live/data/CAMPAIGN/) is simulated with the
calibrated profile of the GPU it ran on (the manifest's gpu_profile) into CAMPAIGN/. One that
calibrated its own instance (its gpu_profile the path of that instance's profile) is simulated
again:
  shipped-profile/       with the manifest's shipped_profile (configs/gpus/NAME): the spread
                         across instances that one profile leaves;
  full-calibration/      where the instance was calibrated per machine and in full, with the full
                         one;
  per-machine-profile/   where it was calibrated in full only, with the per-machine calibration
                         derived from its measurements (`calibrate --refit FULL --from MODEL`).
A two-GPU campaign (experiments/multigpu/data/CAMPAIGN/) is compared run by run
(lab.multigpu.live_vs_sim). Reports go to out/live/CAMPAIGN (out/multigpu/CAMPAIGN), or with
--write-reports to the study's reports/CAMPAIGN/, the committed report.

Paths are given to the simulator relative to the repository, as the reports record them."""
import argparse
import json
import os
import subprocess

from lab import steps
from lab.live import fidelity
from lab.multigpu import live_vs_sim

FAULTLINE = "build/faultline"


def one_gpu(campaign, write_reports):
    """Every fidelity report of one campaign of replays on one GPU."""
    steps.in_repository("fidelity")
    out = os.path.join("experiments/live/reports" if write_reports else "out/live", campaign)
    data = os.path.join("experiments/live/data", campaign)
    fidelity.main([data, out, "--faultline", FAULTLINE], "fidelity")
    with open(os.path.join(data, "manifest.json")) as f:
        manifest = json.load(f)
    profile = manifest.get("gpu_profile", "")
    shipped = manifest.get("shipped_profile", "") if profile.endswith(".json") else ""
    if not shipped:
        return
    fidelity.main([data, os.path.join(out, "shipped-profile"), "--gpu", shipped,
                   "--faultline", FAULTLINE], "fidelity")
    profile = os.path.realpath(os.path.join(data, profile))
    name = os.path.basename(profile)[:-len(".json")]
    calibration = os.path.join(os.path.dirname(os.path.dirname(profile)), "calibration",
                               name + ".json")
    with open(calibration) as f:
        per_machine = '"fault_path_from"' in f.read()
    if per_machine:
        full = os.path.join(os.path.dirname(profile), name + "-full.json")
        if os.path.isfile(full):
            fidelity.main([data, os.path.join(out, "full-calibration"), "--gpu", full,
                           "--faultline", FAULTLINE], "fidelity")
        return
    derived = os.path.join(out, "per-machine-profile")
    # The shipped fault path kept, as the per-machine calibrations of those campaigns' time did.
    subprocess.run([FAULTLINE, "calibrate", "--refit", calibration, "--from", shipped,
                    "--keep-fault-path", "--name", name + "-per-machine", "--out-dir",
                    os.path.join(derived, "calibrated")],
                   check=True, stdout=subprocess.DEVNULL)
    fidelity.main([data, derived, "--gpu", os.path.realpath(
        os.path.join(derived, "calibrated", "gpus", name + "-per-machine.json")),
        "--faultline", FAULTLINE], "fidelity")


def two_gpu(campaign, write_reports):
    """The report of one two-GPU campaign: each live run beside the simulator's prediction."""
    steps.in_repository("fidelity")
    out = "experiments/multigpu/reports" if write_reports else "out/multigpu"
    return live_vs_sim.main([os.path.join("experiments/multigpu/data", campaign),
                             os.path.join(out, campaign), "--faultline", FAULTLINE],
                            "fidelity two-gpu")


def main(argv=None, prog=None, gpus=1):
    """`report CAMPAIGN [--write-reports]` (gpus=1) or `two-gpu CAMPAIGN [--write-reports]`."""
    default = "h200" if gpus == 1 else "h200x2-harvest"
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("campaign", nargs="?", default=default,
                    help=f"a folder of experiments/{'live' if gpus == 1 else 'multigpu'}/data/ "
                         f"(default {default})")
    ap.add_argument("--write-reports", action="store_true",
                    help="write into the study's reports/ (else out/)")
    args = ap.parse_args(argv)
    return (one_gpu if gpus == 1 else two_gpu)(args.campaign, args.write_reports)


# The two subcommands of experiments/live/fidelity.py this module serves: (main, summary).
ONE_GPU = (lambda argv, prog: main(argv, prog, gpus=1),
           "a campaign of live/data/ with each profile its manifest names, into out/live/CAMPAIGN/ "
           "(or live/reports/)")
TWO_GPU = (lambda argv, prog: main(argv, prog, gpus=2),
           "a two-GPU campaign of multigpu/data/ run by run, into out/multigpu/CAMPAIGN/ (or "
           "multigpu/reports/)")
