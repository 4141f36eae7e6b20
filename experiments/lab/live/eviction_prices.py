"""What an eviction costs inside the programs against each price the calibration offers.

    experiments/live/calibration.py evictions [--write] [--data DIR]

Every program campaign under DIR (default experiments/live/data/; `campaign.sh program`, with a
profile/ folder) whose ondemand runs measured their migration stream: under ondemand the stream
holds nothing but the budget's evictions, one 2 MB cudaMemPrefetchAsync to the host each, so the
stream's GPU time over the run's evictions (`results.migration_gpu_ns / results.evictions`) is
what one eviction cost in the program. Beside it, per campaign, the prices its calibration gives
a chunk's eviction with its copy:

- `simulated`: what the simulator charges, the profile's host link back to the host for 2 MB
  plus its eviction_ns (and 32 x eviction_page_ns where the profile splits it so);
- `benchmark`: the eviction benchmark, its chunks evicted in a row after the warm-up;
- `samples`: the mean of the benchmark and the samples spread through the calibration;
- `warm_up`: the median of the warm-up's rounds, thousands of chunks evicted in a row (the
  volume a program's budget evicts each step).

And pump's stream, an eviction and a prefetch in turn, per eviction (`pump_pair_us`): less the
program's eviction, what pump's 2 MB prefetch of a chunk the budget had evicted cost
(`pump_prefetch_us`), beside the simulator's price of that prefetch (`simulated_prefetch_us`:
prefetch_call_ns, prefetch_copy_extra_ns and the host link's 2 MB copy to the GPU) and, where the
calibration timed them, the warm-up's prefetches back of the chunks it evicted
(`warm_up_prefetch_us`, the median of its rounds). Each eviction price is given as its ratio to
the program's median; the summary gives each one's median |ratio - 1| over the campaigns.
Writes evictions.json and evictions.md into experiments/live/reports/eviction-prices/ with
--write (else out/live/eviction-prices/)."""
import argparse
import glob
import os
import statistics

from lab.campaigns import read_json
from lab.live.run_priced import eviction_cost_ns, transfer_ns
from lab.paths import REPO, live_study_dir
from lab.tables import write_json

SUMMARY = "what an eviction costs in the programs against the calibration's prices"

PRICES = ("simulated", "benchmark", "samples", "warm_up")
CHUNK = 2 << 20
PAGES_A_CHUNK = 32


def per_eviction_us(path):
    """The run's migration stream a chunk evicted, us; None where it did not measure it."""
    results = read_json(path, "run").get("results", {})
    if not results.get("evictions") or results.get("migration_gpu_ns") is None:
        return None
    return results["migration_gpu_ns"] / results["evictions"] / 1000


def runs_us(folder, policy):
    values = []
    for path in sorted(glob.glob(os.path.join(folder, f"*-{policy}-*.json"))):
        if path.endswith(".kernels.json"):
            continue
        value = per_eviction_us(path)
        if value is not None:
            values.append(value)
    return values


def calibration_prices(folder):
    """The campaign's calibration prices of a chunk's eviction, us; None where it has no
    profile."""
    name_file = os.path.join(folder, "profile.txt")
    if not os.path.exists(name_file):
        return None
    with open(name_file) as f:
        name = f.read().strip()
    profile = read_json(os.path.join(folder, "profile", "gpus", name + ".json"), "GPU profile")
    link = read_json(os.path.join(folder, "profile", "links", profile["host_link"] + ".json"),
                     "link profile")
    calibration = read_json(os.path.join(folder, "profile", "calibration", name + ".json"),
                            "calibration")
    measured = calibration.get("measurements", {})
    simulated = eviction_cost_ns({"eviction_ns": 0, **profile}, link, PAGES_A_CHUNK)
    prefetch = (profile.get("prefetch_call_ns", 0) + profile.get("prefetch_copy_extra_ns", 0)
                + transfer_ns(link["forward"], CHUNK))
    prices = {"profile": name, "simulated": simulated / 1000, "prefetch": prefetch / 1000}
    eviction = measured.get("eviction")
    if eviction:
        benchmark = eviction["ns"] / eviction["chunks"]
        prices["benchmark"] = benchmark / 1000
        samples = [eviction["ns"]] + list(eviction.get("samples_ns", []))
        prices["samples"] = statistics.mean(samples) / eviction["chunks"] / 1000
    warm = measured.get("warm_up", {}).get("eviction_ns_per_chunk")
    if warm:
        prices["warm_up"] = statistics.median(warm) / 1000
    back = measured.get("warm_up", {}).get("prefetch_ns_per_chunk")
    if back:
        prices["warm_up_prefetch"] = statistics.median(back) / 1000
    return prices


def campaign_row(folder):
    ondemand = runs_us(folder, "ondemand")
    prices = calibration_prices(folder)
    if not ondemand or prices is None:
        return None
    program = statistics.median(ondemand)
    pump = runs_us(folder, "pump")
    row = {"campaign": os.path.basename(folder), "profile": prices.pop("profile"),
           "ondemand_runs": len(ondemand), "program_us": round(program, 1),
           "program_range_us": [round(min(ondemand), 1), round(max(ondemand), 1)],
           "pump_pair_us": round(statistics.median(pump), 1) if pump else None}
    for key in PRICES:
        if key in prices:
            row[key + "_us"] = round(prices[key], 1)
            row[key + "_ratio"] = round(prices[key] / program, 3)
    row["simulated_prefetch_us"] = round(prices["prefetch"], 1)
    if "warm_up_prefetch" in prices:
        row["warm_up_prefetch_us"] = round(prices["warm_up_prefetch"], 1)
    if pump:
        prefetch = statistics.median(pump) - program
        row["pump_prefetch_us"] = round(prefetch, 1)
        row["simulated_prefetch_ratio"] = round(prices["prefetch"] / prefetch, 3) \
            if prefetch > 0 else None
    return row


def study(data_dir):
    rows = [row for folder in sorted(glob.glob(os.path.join(data_dir, "*-program")))
            if (row := campaign_row(folder))]
    summary = {}
    ratios = [r["simulated_prefetch_ratio"] for r in rows if r.get("simulated_prefetch_ratio")]
    if ratios:
        summary["pump_prefetch"] = {"campaigns": len(ratios),
                                    "median_ratio": round(statistics.median(ratios), 3),
                                    "range": [min(ratios), max(ratios)]}
    for key in PRICES:
        misses = [abs(r[key + "_ratio"] - 1) for r in rows if key + "_ratio" in r]
        if misses:
            summary[key] = {"campaigns": len(misses),
                            "median_abs_miss": round(statistics.median(misses), 3),
                            "max_abs_miss": round(max(misses), 3)}
    return {"campaigns": rows, "summary": summary}


def markdown(doc):
    lines = ["# What an eviction costs in the programs",
             "",
             "Made by `experiments/live/calibration.py evictions`: per program campaign, the "
             "migration stream's GPU time under ondemand over its evictions (one 2 MB chunk "
             "each; the median of the runs, their range), and each price the campaign's "
             "calibration gives an eviction with its copy, as its ratio to the program "
             "(`experiments/lab/live/eviction_prices.py` says what each is).",
             "",
             "| campaign | program (us) | range | pump, a pair (us) | simulated | benchmark "
             "| samples | warm-up | pump's prefetch (us) | simulated prefetch | warm-up's "
             "prefetch back (us) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["campaigns"]:
        cells = [f"{r[k + '_us']:.0f} ({r[k + '_ratio']:.2f})" if k + "_us" in r else ""
                 for k in PRICES]
        lo, hi = r["program_range_us"]
        pump = f"{r['pump_pair_us']:.0f}" if r["pump_pair_us"] is not None else ""
        prefetch = f"{r['pump_prefetch_us']:.0f}" if "pump_prefetch_us" in r else ""
        ratio = r.get("simulated_prefetch_ratio")
        simulated = f"{r['simulated_prefetch_us']:.0f}" + (f" ({ratio:.2f})" if ratio else "")
        lines.append(f"| {r['campaign']} | {r['program_us']:.0f} | {lo:.0f}-{hi:.0f} | {pump} | "
                     + " | ".join(cells) + f" | {prefetch} | {simulated} | "
                     + (f"{r['warm_up_prefetch_us']:.0f}" if "warm_up_prefetch_us" in r else "")
                     + " |")
    lines += ["", "Each price's miss over the campaigns, |price / program - 1|:", "",
              "| price | campaigns | median | max |", "|---|---|---|---|"]
    for key, s in doc["summary"].items():
        if key == "pump_prefetch":
            continue
        lines.append(f"| {key} | {s['campaigns']} | {s['median_abs_miss']:.1%} | "
                     f"{s['max_abs_miss']:.1%} |")
    p = doc["summary"].get("pump_prefetch")
    if p:
        lines += ["", f"Pump's prefetch, simulated over program: median {p['median_ratio']:.2f}, "
                      f"{p['range'][0]:.2f} to {p['range'][1]:.2f} over {p['campaigns']} campaigns."]
    return "\n".join(lines) + "\n"


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(REPO, "experiments", "live", "data"),
                    help="where the campaigns are (default experiments/live/data/)")
    ap.add_argument("--write", action="store_true",
                    help="into experiments/live/reports/eviction-prices/")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.data):
        raise SystemExit(f"eviction_prices: {args.data}: no such folder")
    doc = study(args.data)
    if not doc["campaigns"]:
        raise SystemExit(f"eviction_prices: {args.data}: no program campaign with a profile and "
                         "ondemand runs that measured their migration stream")
    doc = {"command": "experiments/live/calibration.py evictions" + (" --write" if args.write
                                                                      else ""), **doc}
    out_dir = live_study_dir("eviction-prices", args.write)
    write_json(os.path.join(out_dir, "evictions.json"), doc)
    with open(os.path.join(out_dir, "evictions.md"), "w") as f:
        f.write(markdown(doc))
    for key, m in doc["summary"].items():
        if key == "pump_prefetch":
            print(f"pump's prefetch: simulated / program median {m['median_ratio']:.2f}")
            continue
        print(f"{key}: median |miss| {m['median_abs_miss']:.1%} over {m['campaigns']} campaigns, "
              f"max {m['max_abs_miss']:.1%}")
    return 0
