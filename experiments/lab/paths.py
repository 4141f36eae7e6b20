"""Where things are: the repository, experiments/ and the built binary."""
import os

EXPERIMENTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(EXPERIMENTS)
FAULTLINE = os.path.join(REPO, "build", "faultline")
