"""experiments/lab/live/calibration_states.py: each calibration's dense fault price and state,
copies counted once, combined documents left out, instances met in both states, and clear
errors for a missing folder or one without calibrations."""
import json
import os
import subprocess
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import calibration_states as states  # noqa: E402


def calibration(name, populate_ns, migrate_ns, combined=False):
    faults = [{"kind": "populate", "blocks": 256, "pages_per_block": 32, "ns": populate_ns},
              {"kind": "populate", "order": "strided", "blocks": 256, "pages_per_block": 32,
               "ns": 1},
              {"kind": "migrate", "blocks": 256, "pages_per_block": 32, "ns": migrate_ns},
              {"kind": "populate", "blocks": 16, "pages_per_block": 32, "ns": 7}]
    m = {"device": "NVIDIA H100 80GB HBM3", "faults": faults, "fault_path_from": {}}
    if combined:
        m["combined_from"] = [{"path": "a"}, {"path": "b"}]
    return {"name": name, "measured_by": "faultline calibrate", "measurements": m}


def put(folder, rel, doc):
    path = os.path.join(folder, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def test_states():
    assert states.state_of(4.75) == "fast" and states.state_of(5.0) == "between"
    assert states.state_of(5.25) == "slow" and states.state_of(None) is None
    with tempfile.TemporaryDirectory() as d:
        page = 256 * 32 * 1000  # ns of the dense benchmark at 1 us a page
        put(d, "h100-aaaa-program/profile/calibration/h100-aaaa.json",
            calibration("h100-aaaa", 4 * page, 7 * page))
        # The same calibration copied into another campaign counts once.
        put(d, "h100-aaaa-holdout/profile/calibration/h100-aaaa.json",
            calibration("h100-aaaa", 4 * page, 7 * page))
        put(d, "h100-aaaa-program/moments/x/calibration/h100-aaaa-x.json",
            calibration("h100-aaaa-x", 6.5 * page, 10 * page))
        put(d, "h100-bbbb-program/profile/calibration/h100-bbbb.json",
            calibration("h100-bbbb", 5 * page, 8 * page))
        # A combined document is its moments, which are there as files of their own.
        put(d, "h100-bbbb-program/profile/calibration/h100-bbbb-both.json",
            calibration("h100-bbbb", 3 * page, 5 * page, combined=True))
        rows = states.calibrations(d)
        assert [(r["instance"], r["state"], r["populate_us"], r["migrate_us"]) for r in rows] == [
            ("aaaa", "fast", 4.0, 7.0), ("aaaa", "slow", 6.5, 10.0),
            ("bbbb", "between", 5.0, 8.0)], rows
        assert rows[0]["path"] == "h100-aaaa-holdout/profile/calibration/h100-aaaa.json", rows
        s = states.summary(rows)["h100"]
        assert (s["calibrations"], s["fast"], s["between"], s["slow"], s["instances"]) == \
            (3, 1, 1, 1, 2), s
        assert s["instances_in_both"] == ["aaaa"], s
        # Program campaigns beside their profile's state; one without a report is left out.
        reports = os.path.join(d, "reports")
        with open(os.path.join(d, "h100-aaaa-program", "profile.txt"), "w") as f:
            f.write("h100-aaaa\n")
        with open(os.path.join(d, "h100-bbbb-program", "profile.txt"), "w") as f:
            f.write("h100-bbbb\n")
        put(reports, "h100-aaaa-program/program.json", {"simulator": {
            "runs": 4, "median_abs_time_error": 0.1,
            "signed_median_by_policy": {"ondemand": 0.2, "pump": -0.05}}})
        put(reports, "h100-bbbb-program/program.json", {"simulator": {
            "runs": 2, "median_abs_time_error": 0.3, "signed_median_by_policy": {"ondemand": 0.4}}})
        put(reports, "h100-cccc-program/program.json", {"simulator": {"runs": 1}})
        programs = states.program_campaigns(d, reports)
        assert [(c["campaign"], c["state"], c["runs"]) for c in programs] == [
            ("h100-aaaa-program", "fast", 4), ("h100-bbbb-program", "between", 2)], programs
        grouped = states.by_state(programs)
        assert grouped["fast"] == {"campaigns": 1, "median_abs_error": 0.1,
                                   "signed_median_by_policy": {"ondemand": 0.2, "pump": -0.05}}
        assert set(grouped) == {"fast", "between"}, grouped


def test_bad_input():
    entry = os.path.join(root, "experiments", "live", "calibration.py")
    with tempfile.TemporaryDirectory() as d:
        for data, expected in ((os.path.join(d, "none"), "no such folder"),
                               (d, "no calibration with the dense fault benchmark")):
            out = subprocess.run([sys.executable, entry, "states", "--data", data],
                                 capture_output=True, text=True)
            assert out.returncode != 0 and expected in out.stderr, out.stderr
        put(d, "c/profile/calibration/bad.json", {})
        with open(os.path.join(d, "c/profile/calibration/bad.json"), "w") as f:
            f.write("{not json")
        out = subprocess.run([sys.executable, entry, "states", "--data", d],
                             capture_output=True, text=True)
        assert out.returncode != 0 and "bad.json" in out.stderr, out.stderr


if __name__ == "__main__":
    test_states()
    test_bad_input()
    print("calibration_states: ok")
