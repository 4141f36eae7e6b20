"""The example notebook (experiments/notebooks/policy_comparison.ipynb) runs headless from the
repository root and writes its speedup table and figure, ondemand at 1.0 against itself."""
import csv
import os

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOK = os.path.join(REPO, "experiments", "notebooks", "policy_comparison.ipynb")
OUT = os.path.join(REPO, "out", "notebooks", "policy_comparison")


def test_policy_comparison_notebook_runs():
    if os.environ.get("FAULTLINE_API_REQUIRED") is None:
        pytest.importorskip("faultline", reason="not installed: pip install .")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": REPO}}).execute()
    assert os.path.getsize(os.path.join(OUT, "speedups.png")) > 10_000
    with open(os.path.join(OUT, "speedups.csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6  # 2 traces x 3 capacities
    assert all(float(r["ondemand"]) == 1.0 for r in rows)
    assert {"deepum", "pump", "oracle", "harvest"} <= set(rows[0])
