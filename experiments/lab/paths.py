"""Where things are: the repository, experiments/ and the built binary."""
import os

EXPERIMENTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(EXPERIMENTS)
FAULTLINE = os.path.join(REPO, "build", "faultline")


def live_study_dir(name, write):
    """Where a live study NAME writes its report, made if missing: the committed
    experiments/live/reports/NAME/ with --write, else out/live/NAME/."""
    path = (os.path.join(EXPERIMENTS, "live", "reports", name) if write
            else os.path.join(REPO, "out", "live", name))
    os.makedirs(path, exist_ok=True)
    return path
