"""stall_split.py recovers how the GPU would have paid each simulated part: live rows made from
the simulation of two shipped traces with each kernel's fault stall halved (its evictions and
compute as simulated) fit a = 1, b = 0.5, c = 1 where there are faults; a run whose kernel count
differs from its simulation is refused."""
import json
import os
import re
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(here)
sys.path.insert(0, os.path.join(repo, "experiments"))
from lab.live.fault_cost_by_kernel import simulate  # noqa: E402

faultline = os.path.join(repo, "build", "faultline")
script = [os.path.join(repo, "experiments", "live", "diagnose.py"), "stall-split"]
runs = []
with tempfile.TemporaryDirectory() as tmp:
    for trace in ("stream", "strided"):
        for budget in (0.5, 0.75):
            path = os.path.join(repo, "traces", "real", f"{trace}.fltrace")
            sim = simulate(faultline, path, "ondemand", budget, "h100")["kernels"]
            rows, t = [], 0
            for k in sim:
                e = k["start_ns"] - k["launched_ns"]
                f = k["end_ns"] - k["start_ns"] - k["compute_ns"]
                span = e + f // 2 + k["compute_ns"]
                rows.append({"start_ns": t, "end_ns": t + span})
                t += span
            live = os.path.join(tmp, f"{trace}-{budget}.json")
            with open(live, "w") as out:
                json.dump({"kernels": rows}, out)
            runs.append(f"{live}:{path}:ondemand:{budget}")
    done = subprocess.run([sys.executable, *script, "--gpu", "h100", "--faultline", faultline] + runs,
                          capture_output=True, text=True, check=True)
    big = [line for line in done.stdout.splitlines() if line.startswith("| 512-")]
    assert len(big) == 1, done.stdout
    a, b, c = (float(x) for x in big[0].strip("| \n").split("|")[-3:])
    assert abs(a - 1) < 0.02 and abs(b - 0.5) < 0.02, done.stdout
    kernels = int(re.split(r"\s*\|\s*", big[0])[2])
    assert kernels >= 10, done.stdout

    with open(os.path.join(tmp, "short.json"), "w") as out:
        json.dump({"kernels": [{"start_ns": 0, "end_ns": 1}]}, out)
    bad = subprocess.run([sys.executable, *script, "--gpu", "h100", "--faultline", faultline,
                          f"{tmp}/short.json:{repo}/traces/real/stream.fltrace:ondemand:0.5"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "1 kernel rows, the simulation" in bad.stderr, bad.stderr
    bad = subprocess.run([sys.executable, *script, "--gpu", "h100", "a.json:b"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "expected LIVE.json:TRACE:POLICY:BUDGET" in bad.stderr, bad.stderr
print("stall_split: fit and refusals as expected")
