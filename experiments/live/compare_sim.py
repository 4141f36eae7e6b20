"""Live replay results against the simulator's predictions for the same runs.
    python3 experiments/live/compare_sim.py RESULTS_DIR [FAULTLINE_BIN]
For each TRACE-POLICY-BUDGET.json that `faultline replay` wrote, runs `faultline sim` with
configs/runs/default.json at the same policy and capacity, and prints a Markdown table of time,
bytes moved each way and evictions, with the simulator's error relative to the GPU."""
import glob
import json
import os
import subprocess
import sys
import tempfile


def simulate(faultline, trace, policy, fraction):
    config = json.load(open("configs/runs/default.json"))
    config["capacity"] = {"fraction_of_footprint": fraction}
    config["policy"] = {"name": policy}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        out = subprocess.run([faultline, "sim", "--config", f.name, "--trace", trace,
                              "--no-progress"], capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    return json.loads(out.stdout)["results"]


def main():
    results_dir = sys.argv[1]
    faultline = sys.argv[2] if len(sys.argv) > 2 else "build/faultline"
    print("| trace | policy | budget | time GPU | time sim | error | HtoD GPU / sim (GB) "
          "| DtoH GPU / sim (GB) | evictions GPU / sim |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        doc = json.load(open(path))
        live = doc["results"]
        trace = doc["trace"]["path"]
        policy = doc["config"]["policy"]["name"]
        fraction = doc["config"]["budget"]["fraction_of_footprint"]
        sim = simulate(faultline, trace, policy, fraction)
        error = sim["total_time_ns"] / live["total_time_ns"] - 1
        gb = lambda r, k: r[k] / 1e9
        print(f"| {os.path.basename(trace).split('.')[0]} | {policy} | {fraction:.0%} "
              f"| {live['total_time_ns'] / 1e9:.3f} s | {sim['total_time_ns'] / 1e9:.3f} s "
              f"| {error:+.0%} | {gb(live, 'bytes_host_to_gpu'):.1f} / "
              f"{gb(sim, 'bytes_host_to_gpu'):.1f} | {gb(live, 'bytes_gpu_to_host'):.1f} / "
              f"{gb(sim, 'bytes_gpu_to_host'):.1f} | {live['evictions']} / {sim['evictions']} |")


if __name__ == "__main__":
    main()
