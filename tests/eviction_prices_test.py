"""experiments/lab/live/eviction_prices.py: the program's cost a chunk evicted under ondemand,
each calibration price's ratio to it, pump's prefetch against the simulator's price of it, the
link's 2 MB time as the simulator computes it, and
clear errors for a missing folder, one without campaigns and a malformed run."""
import json
import os
import subprocess
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import eviction_prices as prices  # noqa: E402


def put(folder, rel, doc):
    path = os.path.join(folder, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(doc if isinstance(doc, str) else json.dumps(doc))


def run(migration_ns, evictions):
    return {"results": {"migration_gpu_ns": migration_ns, "evictions": evictions}}


def campaign(d, name="h100-aaaa-program"):
    put(d, f"{name}/profile.txt", "h100-aaaa\n")
    put(d, f"{name}/profile/gpus/h100-aaaa.json",
        {"name": "h100-aaaa", "host_link": "h100-aaaa-host", "eviction_ns": 20000,
         "prefetch_call_ns": 5000, "prefetch_copy_extra_ns": 45000})
    # Back: 2 MB at 20.97152 GB/s is 100 us, with 10 us of overhead; forward: 40 us and 10.
    put(d, f"{name}/profile/links/h100-aaaa-host.json", {
        "reverse": {"bandwidth_gbps": [[1 << 30, 2 * 1048576 / 100000]], "overhead_ns": 10000},
        "forward": {"bandwidth_gbps": [[1 << 30, 2 * 1048576 / 40000]], "overhead_ns": 10000}})
    put(d, f"{name}/profile/calibration/h100-aaaa.json", {"measurements": {
        "eviction": {"chunks": 100, "ns": 10_000_000, "samples_ns": [14_000_000, 12_000_000]},
        "warm_up": {"chunks": 4096, "eviction_ns_per_chunk": [300000, 260000, 250000],
                    "prefetch_ns_per_chunk": [90000, 70000, 80000]}}})
    # ondemand: 200 and 260 us a chunk (median 230); pump 400; the per-kernel run left out.
    put(d, f"{name}/x-ondemand-0.75.json", run(200_000_000, 1000))
    put(d, f"{name}/x-ondemand-0.75.r2.json", run(260_000_000, 1000))
    put(d, f"{name}/x-ondemand-0.75.kernels.json", run(1, 1))
    put(d, f"{name}/x-pump-0.75.json", run(400_000_000, 1000))


def test_prices():
    link = {"bandwidth_gbps": [[1 << 20, 10.0], [1 << 22, 20.0]], "overhead_ns": 5}
    assert prices.transfer_ns(link, 1 << 21) == 5 + -(-(1 << 21) // 15)  # halfway on log2
    assert prices.transfer_ns(link, 1 << 30) == 5 + (1 << 30) // 20 + 1
    with tempfile.TemporaryDirectory() as d:
        campaign(d)
        put(d, "h100-bbbb-program/x-ondemand-0.75.json", run(1, 1))  # no profile: left out
        doc = prices.study(d)
        assert [r["campaign"] for r in doc["campaigns"]] == ["h100-aaaa-program"], doc
        r = doc["campaigns"][0]
        assert (r["program_us"], r["program_range_us"], r["ondemand_runs"]) == (230, [200, 260], 2)
        assert r["pump_pair_us"] == 400 and r["pump_prefetch_us"] == 170
        assert r["simulated_prefetch_us"] == 100 and r["simulated_prefetch_ratio"] == 0.588, r
        assert doc["summary"]["pump_prefetch"] == {"campaigns": 1, "median_ratio": 0.588,
                                                   "range": [0.588, 0.588]}
        assert r["simulated_us"] == 130 and r["simulated_ratio"] == round(130 / 230, 3), r
        assert r["benchmark_us"] == 100 and r["samples_us"] == 120 and r["warm_up_us"] == 260, r
        assert doc["summary"]["warm_up"] == {"campaigns": 1, "median_abs_miss": 0.13,
                                             "max_abs_miss": 0.13}, doc["summary"]
        text = prices.markdown(doc)
        assert "| h100-aaaa-program | 230 | 200-260 | 400 | 130 (0.56) |" in text, text
        assert r["warm_up_prefetch_us"] == 80, r
        assert "| 170 | 100 (0.59) | 80 |" in text and "median 0.59, 0.59 to 0.59" in text, text


def test_bad_input():
    entry = os.path.join(root, "experiments", "live", "calibration.py")
    with tempfile.TemporaryDirectory() as d:
        for data, expected in ((os.path.join(d, "none"), "no such folder"),
                               (d, "no program campaign")):
            out = subprocess.run([sys.executable, entry, "evictions", "--data", data],
                                 capture_output=True, text=True)
            assert out.returncode != 0 and expected in out.stderr, out.stderr
        campaign(d)
        put(d, "h100-aaaa-program/y-ondemand-0.5.json", "{not json")
        out = subprocess.run([sys.executable, entry, "evictions", "--data", d],
                             capture_output=True, text=True)
        assert out.returncode != 0 and "y-ondemand-0.5.json" in out.stderr, out.stderr


if __name__ == "__main__":
    test_prices()
    test_bad_input()
    print("eviction_prices: ok")
