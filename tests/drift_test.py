"""experiments/lab/live/drift.py: the errors of each profile against the median of the passes and
against each pass, each pass with the calibration before it, the GPU against itself, and a clear
error for a campaign without calibrations of several moments."""
import os
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import drift  # noqa: E402


def test_errors():
    a, b = ("a", "ondemand", 0.5), ("b", "pump", 0.5)
    live = {a: {1: 10.0, 2: 12.0, 3: 11.0}, b: {1: 4.0, 2: 4.0, 3: 5.0}}
    sims = {"at1": {a: 11.0, b: 4.0}, "at2": {a: 9.9, b: 4.4}, "at3": {a: 11.0, b: 5.0},
            "combined": {a: 11.0, b: 4.4}}
    out = drift.analyse(live, sims)
    assert out["passes"] == [1, 2, 3] and out["runs"] == 2
    m = out["profiles"]["at1"]["against_median_of_passes"]  # a: 11 vs 11, b: 4 vs 4
    assert m == {"median": 0.0, "max": 0.0}, m
    p1 = out["profiles"]["combined"]["against_each_pass"][1]  # a: 11/10, b: 4.4/4
    assert abs(p1["median"] - 0.1) < 1e-9 and abs(p1["max"] - 0.1) < 1e-9, p1
    # Pass 1 with at1 (0.1, 0), pass 2 with at2 (0.175, 0.1), pass 3 with at3 (0, 0).
    before = out["each_pass_with_the_calibration_before_it"]
    assert abs(before["median"] - 0.05) < 1e-9 and abs(before["max"] - 0.175) < 1e-9, before
    # a: 10 vs 11.5, 12 vs 10.5, 11 vs 11; b: 4 vs 4.5, 4 vs 4.5, 5 vs 4.
    itself = out["gpu_against_itself"]
    assert abs(itself["max"] - 0.25) < 1e-9, itself
    assert out["live_s"]["a/ondemand/0.5"] == [10.0, 12.0, 11.0]
    assert "| combined |" in drift.markdown(out)


def test_runs_missing_a_pass_are_left_out():
    a, b = ("a", "ondemand", 0.5), ("b", "pump", 0.5)
    live = {a: {1: 10.0, 2: 10.0}, b: {1: 4.0}}
    out = drift.analyse(live, {"at1": {a: 10.0, b: 1.0}, "at2": {a: 10.0, b: 1.0}})
    assert out["runs"] == 1 and out["profiles"]["at1"]["against_median_of_passes"]["max"] == 0


def test_one_calibration_is_refused():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "profile", "calibration"))
        open(os.path.join(d, "profile", "calibration", "gpu-at1.json"), "w").close()
        try:
            drift.moments(d)
            raise AssertionError("taken")
        except SystemExit as e:
            assert "expected two or more" in str(e) and d in str(e), str(e)


if __name__ == "__main__":
    test_errors()
    test_runs_missing_a_pass_are_left_out()
    test_one_calibration_is_refused()
    print("drift: ok")
