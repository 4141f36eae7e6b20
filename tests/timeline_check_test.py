"""`experiments/capture/check.py timeline` (experiments/lab/capture/timeline.py): each simulated
step against the program's step in the trace (the median and largest error over steps 2..N, and
over the steady steps, those with no fault), the program run alone beside it from a folder of
`experiments/campaign.sh capture`, the hold-out label, and its refusal of a trace with no
program times. Given the faultline binary, also the property the timeline exists for: every
shipped PyTorch trace and the Llama hold-out, simulated at the whole footprint, within 5% of the
program's steps in the trace (median over the steady steps 2..N, or over steps 2..N where every
step takes first touches)."""
import json
import os
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.capture import timeline  # noqa: E402


def result(times_ms, program_ms, faults):
    steps = [{"step": -1, "time_ns": 1, "faults": 0}]
    for t, p, f in zip(times_ms, program_ms, faults):
        steps.append({"step": len(steps) - 1, "time_ns": int(t * 1e6), "program_ns": int(p * 1e6),
                      "faults": f})
    return {"steps": steps, "trace": {"metadata": {"gpu": "GPU X"}}}


def cells(line):
    return [c.strip() for c in line.strip("|").split("|")]


def test_errors_and_steady_steps():
    # Step 2 has first touches (+50%), step 3 is steady (+10%): median over 2..3 is +30%.
    line = timeline.row("traces/real/w.fltrace", result([900, 150, 110], [100, 100, 100],
                                                       [5, 3, 0]), [])
    c = cells(line)
    assert c[0] == "w" and c[1] == "GPU X"
    assert c[2] == "900.0/100.0* 150.0/100.0* 110.0/100.0"
    assert c[3] == "+30.0%" and c[4] == "+50.0%"
    assert c[5] == "+10.0% (1)"
    assert len(c) == 6


def test_no_steady_step():
    c = cells(timeline.row("t.fltrace", result([900, 96, 98], [100, 100, 100], [1, 1, 1]), []))
    assert c[3] == "-3.0%" and c[4] == "-4.0%" and c[5] == "none"


def test_program_alone_and_holdout():
    with tempfile.TemporaryDirectory() as folder:
        runs = os.path.join(folder, "sub", "w.runs.jsonl")
        os.makedirs(os.path.dirname(runs))
        with open(runs, "w") as f:
            f.write(json.dumps({"workload": "w", "mode": "capture",
                                "program": {"step_seconds": [9, 9, 9]}}) + "\n")
            f.write(json.dumps({"workload": "w", "mode": "plain",
                                "program": {"workload": "w", "step_seconds": [0.5, 0.1, 0.08]}})
                    + "\n")
        trace = os.path.join("x", "holdout", "w.fltrace")
        c = cells(timeline.row(trace, result([900, 150, 110], [100, 100, 100], [5, 3, 0]),
                               [folder]))
        assert c[0] == "w (hold-out)"
        # Alone: steps 2..N; against it, the steady step only: 110 ms against 80 ms.
        assert c[6] == "100.0 80.0"
        assert c[7] == "+37.5%"
        # A workload with no plain run leaves the two cells empty.
        c = cells(timeline.row("v.fltrace", result([900, 150, 110], [100, 100, 100],
                                                   [5, 3, 0]), [folder]))
        assert c[6:] == ["", ""]


def test_one_step_refused():
    try:
        timeline.row("o.fltrace", result([900], [100], [0]), [])
    except SystemExit as e:
        assert "one step only" in str(e)
    else:
        raise AssertionError("a one-step trace was accepted")


def test_no_program_times_refused():
    r = result([900, 150], [100, 100], [0, 0])
    del r["steps"][1]["program_ns"]
    try:
        timeline.row("n.fltrace", r, [])
    except SystemExit as e:
        assert "no program_step_ns" in str(e)
    else:
        raise AssertionError("a trace without program times was accepted")


SHIPPED = ["resnet50", "gpt2-small", "gpt2-medium", "bert-large", "t5-base", "moe", "graphsage",
           "pagerank"]
HOLDOUT = "experiments/capture/data/h100-runs-j/holdout/llama.fltrace"


def check_shipped(binary):
    traces = [os.path.join(root, "traces", "real", f"{n}.fltrace") for n in SHIPPED]
    for trace in traces + [os.path.join(root, HOLDOUT)]:
        steps = [s for s in timeline.simulate(trace, 0, binary)["steps"] if s["step"] >= 0]
        later = steps[1:]
        chosen = [s for s in later if s["faults"] == 0] or later
        errors = sorted(abs(s["time_ns"] - s["program_ns"]) / s["program_ns"] for s in chosen)
        median = errors[len(errors) // 2] if len(errors) % 2 else \
            (errors[len(errors) // 2 - 1] + errors[len(errors) // 2]) / 2
        assert median <= 0.05, f"{trace}: {median:.1%} from the program's steps"
    # The GPU's own gaps between queued kernels: about a microsecond each on the H100.
    gaps, program = timeline.gpu_gaps(traces[0], binary)
    assert len(gaps) > 1000 and program > 0
    assert 500 < sorted(gaps)[len(gaps) // 2] < 5000
    assert timeline.gaps_row(traces[0], binary).startswith("| resnet50 | ")


if __name__ == "__main__":
    for name, test in list(globals().items()):
        if name.startswith("test_"):
            test()
    if len(sys.argv) > 1:
        check_shipped(sys.argv[1])
    print("timeline_check: ok")
