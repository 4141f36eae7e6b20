"""experiments/lab/live/call_log.py: a call log's kinds, its swaps once the driver's queue is full,
its evictions matched in order against the simulator's, and a clear error for a malformed log."""
import json
import os
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import call_log  # noqa: E402

HEADER = "kernel,kind,address,bytes,start_ns,cpu_ns\n"
MB2 = 2 << 20


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_swaps_and_kinds():
    # Kernel 0: two queued swaps (3 us calls), then three blocking ones 300 us apart; kernel 1:
    # a held prefetch.
    lines, t = [], 0
    for i in range(5):
        cpu = 3_000 if i < 2 else 150_000
        lines.append(f"0,e,{(10 + i) * MB2},{MB2},{t},{cpu}")
        lines.append(f"0,m,{(50 + i) * MB2},{MB2},{t + cpu},{cpu}")
        t += 2 * cpu if i < 2 else 300_000
    lines.append(f"1,h,{50 * MB2},{MB2},{t},4000")
    with tempfile.TemporaryDirectory() as d:
        rows = call_log.read(write(d, "a.csv", HEADER + "\n".join(lines) + "\n"))
    kinds = call_log.by_kind(rows)
    assert kinds["e"]["calls"] == 5 and kinds["m"]["calls"] == 5 and kinds["h"]["calls"] == 1
    assert kinds["e"]["queued_share"] == 0.4 and kinds["h"]["queued_share"] == 1.0
    # The blocking swaps whose next eviction is in the same kernel: the third and fourth.
    assert call_log.swap_costs(rows) == [300_000, 300_000]


def test_evictions_match_the_simulator():
    # Live: chunk 10 in two runs (one eviction), chunk 11, then a kernel's last eviction.
    log = HEADER + "\n".join([f"0,e,{10 * MB2},{8 * 65536},0,150000",
                              f"0,e,{10 * MB2 + 16 * 65536},{8 * 65536},150000,20000",
                              f"0,e,{11 * MB2},{MB2},200000,190000",
                              f"0,m,{20 * MB2},{MB2},390000,100000",
                              f"1,e,{12 * MB2},{MB2},900000,190000"]) + "\n"
    timeline = {"traceEvents": [
        {"ph": "X", "name": "budget eviction", "ts": 0.0, "dur": 50, "args": {"bytes": 16 * 65536}},
        {"ph": "X", "name": "budget eviction", "ts": 180.0, "dur": 140, "args": {"bytes": MB2}},
        {"ph": "X", "name": "budget eviction", "ts": 5000.0, "dur": 140, "args": {"bytes": MB2}},
        {"ph": "X", "name": "prefetch", "ts": 400.0, "dur": 60, "args": {"bytes": MB2}}]}
    with tempfile.TemporaryDirectory() as d:
        live = call_log.evictions(call_log.read(write(d, "a.csv", log)))
        path = write(d, "tl.json", json.dumps(timeline))
        sim = call_log.simulated_evictions(path)
    assert [e["bytes"] for e in live] == [16 * 65536, MB2, MB2]
    assert [e["gap"] for e in live] == [200_000, None, None]  # the next is another kernel's
    assert [e["gap"] for e in sim] == [180_000, None, None]  # 4.8 ms later: another kernel's
    assert call_log.matched(live, sim) == {"5-16": ([200_000], [180_000])}


def test_bad_logs():
    cases = [("kernel,kind\n0,e\n", "line 1: expected the header"),
             (HEADER + "0,e,1,2,3,x\n", "line 2: expected integers"),
             (HEADER + "0,e,1,2,3,4\n0,z,1,2,3,4\n", "line 3: kind 'z'")]
    with tempfile.TemporaryDirectory() as d:
        for text, message in cases:
            try:
                call_log.read(write(d, "bad.csv", text))
                raise AssertionError(f"taken: {text!r}")
            except ValueError as e:
                assert message in str(e) and "bad.csv" in str(e), (message, str(e))


if __name__ == "__main__":
    test_swaps_and_kinds()
    test_evictions_match_the_simulator()
    test_bad_logs()
    print("call log: ok")
