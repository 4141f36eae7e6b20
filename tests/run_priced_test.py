"""experiments/lab/live/run_priced.py: a run's eviction price from its call log (blocking 2 MB
evictions only), which runs are not priced and why, the calibration's price, clear errors for
malformed logs, and end to end on two runs of a real campaign: at the calibration's own price a
run simulates as calibrated, at a higher price slower."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import run_priced  # noqa: E402

HEADER = "kernel,kind,address,bytes,start_ns,cpu_ns\n"
MB2 = 2 << 20
CAMPAIGN = os.path.join(root, "experiments", "live", "data", "h200-153bc426")


def log(rows):
    return HEADER + "".join(f"{k},{kind},{a},{b},{s},{c}\n" for k, kind, a, b, s, c in rows)


def test_price_of():
    rows = [(1, "e", 0, MB2, 0, 200_000), (1, "e", MB2, MB2, 1, 300_000),
            (1, "e", 2 * MB2, MB2, 2, 5_000),        # queued: not a cost
            (1, "e", 3 * MB2, 65536, 3, 900_000),    # a run of pages, not a chunk
            (1, "m", 4 * MB2, MB2, 4, 800_000),      # a prefetch to the GPU
            (2, "e", 5 * MB2, MB2, 5, 250_000)]
    price, count, cpu_s = run_priced.price_of("x.csv", log(rows))
    assert (price, count) == (250_000, 3), (price, count)
    assert abs(cpu_s - 0.001655) < 1e-12, cpu_s


def test_malformed_logs_say_where():
    for text, want in [("kernel,kind\n1,e\n", "x.csv: line 1: expected the header"),
                       (HEADER + "1,e,0,2097152,0,100\n1,e,0,many,0,100\n",
                        "x.csv: line 3: expected integer bytes and cpu_ns")]:
        try:
            run_priced.price_of("x.csv", text)
            raise AssertionError("taken")
        except ValueError as e:
            assert want in str(e), str(e)


def test_chunk_fill():
    full = {"evictions": 10, "bytes_gpu_to_host": 10 * MB2 + 4 * MB2,
            "policy_evicted_bytes": 4 * MB2}
    assert run_priced.chunk_fill(full) == 1.0
    assert run_priced.chunk_fill({"evictions": 4, "bytes_gpu_to_host": MB2}) == 0.25
    assert run_priced.chunk_fill({"evictions": 0, "bytes_gpu_to_host": MB2}) is None


def test_full_chunk_price():
    """A full chunk's cost in the profile is the price it was refitted at; a call on chunks held
    in half is scaled up by the profile's own costs."""
    with tempfile.TemporaryDirectory() as tmp:
        cal = os.path.join(CAMPAIGN, "profile", "calibration", "h200-153bc426.json")
        subprocess.run([os.path.join(root, "build", "faultline"), "calibrate", "--refit", cal,
                        "--eviction-ns", "250000", "--name", "t", "--out-dir", tmp],
                       check=True, capture_output=True)
        gpu, link = run_priced.calibrated_profile(os.path.join(tmp, "gpus", "t.json"))
        # within 2%: the fit clamps eviction_ns at 0 where the per-page line overshoots
        assert abs(run_priced.eviction_cost_ns(gpu, link, 32) / 250_000 - 1) < 0.02
        assert run_priced.full_chunk_price(100_000, 1.0, gpu, link) == 100_000
        assert run_priced.full_chunk_price(100_000, 1.02, gpu, link) == 100_000
        half = run_priced.full_chunk_price(100_000, 0.5, gpu, link)
        assert 150_000 < half < 200_000, half


def calibration(tmp, eviction, per_machine):
    path = os.path.join(tmp, "cal.json")
    m = {"eviction": eviction, **({"fault_path_from": {"profile": "h200"}} if per_machine else {})}
    with open(path, "w") as f:
        json.dump({"measurements": m}, f)
    return path


def test_calibration_price():
    with tempfile.TemporaryDirectory() as tmp:
        ev = {"chunks": 4, "ns": 800_000, "samples_ns": [1_200_000]}
        assert run_priced.calibration_price(calibration(tmp, ev, False)) == 200_000
        assert run_priced.calibration_price(calibration(tmp, ev, True)) == 250_000
        ev["priced_at_ns"] = 123_000
        assert run_priced.calibration_price(calibration(tmp, ev, True)) == 123_000


def small_campaign(tmp, price_ns):
    """Two runs of the real campaign (pagerank ondemand and pump at 75%) with its profile and
    manifest, their eviction logs replaced by ones whose blocking evictions cost PRICE_NS."""
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    for name in ("manifest.json", "profile"):
        src = os.path.join(CAMPAIGN, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copyfile)(src, os.path.join(data, name))
    rows = [(1, "e", i * MB2, MB2, i, price_ns) for i in range(40)]
    for run in ("pagerank-ondemand-0.75", "pagerank-pump-0.75"):
        shutil.copyfile(os.path.join(CAMPAIGN, run + ".json"), os.path.join(data, run + ".json"))
        with open(os.path.join(data, run + ".calls.e.csv"), "w") as f:
            f.write(log(rows))
    return data


def priced(tmp, price_ns):
    data = small_campaign(os.path.join(tmp, str(price_ns)), price_ns)
    out = os.path.join(tmp, str(price_ns), "out")
    subprocess.run([sys.executable, os.path.join(root, "experiments", "live", "diagnose.py"),
                    "priced", data, out, "--faultline", os.path.join(root, "build", "faultline")],
                   check=True, capture_output=True)
    with open(os.path.join(out, "run_priced.json")) as f:
        doc = json.load(f)
    return doc, {r["policy"]: r for r in doc["runs"]}


def test_end_to_end():
    with tempfile.TemporaryDirectory() as tmp:
        own = run_priced.calibration_price(os.path.join(
            CAMPAIGN, "profile", "calibration", "h200-153bc426.json"))
        doc, runs = priced(tmp, own)
        assert doc["calibration_price_ns"] == own, doc["calibration_price_ns"]
        assert "pump" in runs["pump"]["not_priced"], runs["pump"]
        od = runs["ondemand"]
        assert od["call_ns"] == own and od["blocking_evictions"] == 40, od
        assert abs(od["price_ns"] / own - 1) < 0.01, od  # pagerank's chunks are held whole
        assert abs(od["sim_run_priced_s"] / od["sim_calibrated_s"] - 1) < 0.002, od
        _, slow = priced(tmp, 2 * own)
        assert slow["ondemand"]["sim_run_priced_s"] > 1.05 * od["sim_calibrated_s"], slow
        assert slow["ondemand"]["sim_calibrated_s"] == od["sim_calibrated_s"]
        with open(os.path.join(tmp, str(2 * own), "out", "run_priced.md")) as f:
            assert "pagerank ondemand 75%" in f.read()


def test_campaign_without_logs_is_refused():
    with tempfile.TemporaryDirectory() as tmp:
        data = small_campaign(tmp, 200_000)
        for name in os.listdir(data):
            if name.endswith(".calls.e.csv"):
                os.remove(os.path.join(data, name))
        out = subprocess.run([sys.executable, os.path.join(root, "experiments", "live",
                                                           "diagnose.py"), "priced", data,
                              os.path.join(tmp, "out")], capture_output=True, text=True)
        assert out.returncode != 0 and "no run has a priced eviction log" in out.stderr, out.stderr


if __name__ == "__main__":
    test_price_of()
    test_malformed_logs_say_where()
    test_chunk_fill()
    test_full_chunk_price()
    test_calibration_price()
    test_end_to_end()
    test_campaign_without_logs_is_refused()
    print("run_priced: ok")
