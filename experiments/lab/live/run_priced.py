"""Each run simulated at the eviction price its own call log shows it paid: how much of the
simulator's error is the moment's eviction cost, and how much is left to the model.

    experiments/live/diagnose.py priced DATA_DIR OUT_DIR [--faultline BIN] [--jobs N]

DATA_DIR is a campaign of experiments/campaign.sh live made with `campaign.sh replay` with CALL_LOG=1: its
runs' eviction rows (TRACE-POLICY-BUDGET[.rN].calls.e.csv) in DATA_DIR/calls.tar.zst or beside
the results, its profile in profile/ (the manifest's gpu_profile). A run's eviction price is the
median CPU time of its 2 MB evictions that blocked (10 us or more): an eviction to the host
blocks until its copy is done (call_log.py), so under ondemand, DeepUM and the oracle that time
is a chunk's eviction with its copy, the quantity the calibration's eviction benchmark prices
(the mean of the benchmark and its samples, in a per-machine calibration). Pump's evictions queue
behind its prefetches, so their times are waits, not costs: pump's runs are not priced, nor are
runs with fewer than MIN_EVICTIONS blocking evictions, nor runs with no budget eviction in the
simulator. A 2 MB call moves only the pages the chunk holds, so where the simulator's
budget-evicted chunks hold a share f of their pages (chunk_fill) the median call is taken as a
chunk of that fill and scaled to a full chunk by the calibrated profile's own eviction cost at f
and at 1 (full_chunk_price: eviction_ns, eviction_page_ns and the reverse link's copy); below
MIN_FILL the run is not priced. Each priced run is simulated twice, with the campaign's
calibration refitted as fidelity.py fits it and refitted at the run's price (`faultline
calibrate --refit CAL --eviction-ns PRICE`; the refitted profiles are not kept). OUT_DIR gets
  run_priced.json  per run: live time, its median blocking call, the chunks' simulated fill, its
                   price as a full chunk (or why it has none), its evictions' share of the live
                   time, simulated time and error at the calibration's price and at its own;
                   the calibration's price; medians, maxima and misses at either
  run_priced.md    the same as a table
"""
import argparse
import concurrent.futures
import csv
import io
import json
import math
import os
import statistics
import subprocess
import tarfile
import tempfile

from lab.campaigns import load_manifest, load_runs, repo_relative
from lab.live import fidelity
from lab.live.call_log import BLOCK, HEADER, QUEUED_NS
from lab.sim import replayed_trace
from lab.tables import write_json

SUMMARY = "each run of a campaign with call logs simulated at the eviction price it met"

MIN_EVICTIONS = 20
MIN_FILL = 0.5
NOT_PRICED = {"pump": "pump's evictions queue behind its prefetches: their CPU time is a wait"}


def eviction_logs(data_dir):
    """{run file name without .json: (name of the log, its text)} from DATA_DIR/calls.tar.zst and
    from *.calls.e.csv beside the results."""
    logs = {}
    archive = os.path.join(data_dir, "calls.tar.zst")
    if os.path.exists(archive):
        out = subprocess.run(["zstd", "-dc", archive], capture_output=True, check=False)
        if out.returncode != 0:
            raise SystemExit(f"run_priced: {archive}: zstd -d failed: "
                             + out.stderr.decode(errors="replace").strip())
        with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
            for member in tar.getmembers():
                name = os.path.basename(member.name)
                if member.isfile() and name.endswith(".calls.e.csv"):
                    text = tar.extractfile(member).read().decode()
                    logs[name[:-len(".calls.e.csv")]] = (f"{archive}:{name}", text)
    for name in sorted(os.listdir(data_dir)):
        if name.endswith(".calls.e.csv"):
            with open(os.path.join(data_dir, name)) as f:
                logs[name[:-len(".calls.e.csv")]] = (os.path.join(data_dir, name), f.read())
    return logs


def price_of(where, text):
    """(median ns of the blocking 2 MB evictions, their count, CPU s of all evictions) of one
    eviction log; ValueError naming the log and line where it is malformed."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames != HEADER:
        raise ValueError(f"{where}: line 1: expected the header {','.join(HEADER)}")
    blocking, cpu = [], 0
    for line, r in enumerate(reader, start=2):
        try:
            size, ns = int(r["bytes"]), int(r["cpu_ns"])
        except (TypeError, ValueError):
            raise ValueError(f"{where}: line {line}: expected integer bytes and cpu_ns") from None
        if r["kind"] != "e":
            continue
        cpu += ns
        if size == BLOCK and ns >= QUEUED_NS:
            blocking.append(ns)
    median = round(statistics.median(blocking)) if blocking else None
    return median, len(blocking), cpu / 1e9


def calibration_price(calibration):
    """The ns a chunk's eviction with its copy is priced at by the calibration's fit: the
    benchmark, in a per-machine calibration (fault_path_from) the mean of the benchmark and its
    samples (calibrate_fit.cc, eviction_level_factor)."""
    with open(calibration) as f:
        m = json.load(f)["measurements"]
    ev = m["eviction"]
    if "priced_at_ns" in ev:
        return ev["priced_at_ns"]
    times = [ev["ns"]] + (ev.get("samples_ns", []) if "fault_path_from" in m else [])
    return round(statistics.mean(times) / ev["chunks"])


def calibrated_profile(gpu_path):
    """The profile's JSON and its host link's (fidelity.profile_keys finds the link)."""
    keys = fidelity.profile_keys(gpu_path)
    with open(keys["gpu"]) as f, open(keys["host_link"]) as g:
        return json.load(f), json.load(g)


def refit_args(data_dir):
    """The calibration behind the campaign's profile and the refit arguments that reproduce the
    profile fidelity.py simulates with (the shipped fault path where fidelity.py takes it)."""
    manifest = load_manifest(data_dir)
    gpu = os.path.abspath(os.path.join(data_dir, manifest["gpu_profile"]))
    name = os.path.basename(gpu)[:-len(".json")]
    calibration = os.path.join(os.path.dirname(os.path.dirname(gpu)), "calibration",
                               name + ".json")
    shipped = manifest.get("shipped_profile")
    args = ["--refit", calibration]
    if fidelity.shipped_fault_path_differs(calibration, shipped):
        args += ["--from", shipped]
    return name, calibration, shipped, args


def profile_at(faultline, args, name, price, out_dir, shipped):
    """The campaign's profile refitted at PRICE ns a chunk (None: as calibrated), filled like
    fidelity.py's."""
    label = f"{name}-ev{price}" if price else name
    where = os.path.abspath(os.path.join(out_dir, "profiles", label))
    gpu = fidelity.refit(faultline, [*args, *(["--eviction-ns", str(price)] if price else [])],
                         label, where, "run_priced")
    return fidelity.filled_profile(gpu, shipped, where)[0]


def priced_runs(data_dir, logs):
    """The campaign's runs with their price, or the reason they have none."""
    runs = []
    for run in load_runs(data_dir):
        stem = os.path.basename(run["path"])[:-len(".json")]
        row = {"trace": run["trace"], "policy": run["policy"], "budget": run["budget"],
               "repeat": run["repeat"], "trace_path": run["trace_path"],
               "revision": run["revision"], "live_s": run["results"]["total_time_ns"] / 1e9}
        if stem not in logs:
            row["not_priced"] = "no call log"
        else:
            price, count, cpu_s = price_of(*logs[stem])
            row.update(call_ns=price, blocking_evictions=count,
                       eviction_share=cpu_s / row["live_s"])
            if run["policy"] in NOT_PRICED:
                row["not_priced"] = NOT_PRICED[run["policy"]]
            elif count < MIN_EVICTIONS:
                row["not_priced"] = f"{count} blocking 2 MB evictions, fewer than {MIN_EVICTIONS}"
        runs.append(row)
    return runs


def chunk_fill(results):
    """The share of their pages the simulated run's budget-evicted chunks held, on average: the
    bytes back to the host less the policy's own evictions, over the budget evictions' whole
    chunks (None without budget evictions)."""
    if not results["evictions"]:
        return None
    back = results["bytes_gpu_to_host"] - results.get("policy_evicted_bytes", 0)
    return round(back / (results["evictions"] * BLOCK), 3)


def transfer_ns(direction, nbytes):
    """The simulator's time for NBYTES over a link direction ({"bandwidth_gbps": [[bytes, GB/s]
    ...], "overhead_ns"}): the rate interpolated on log2(bytes) between its points, as
    sim/config/profiles.cc's LinkCurve::transfer_ns (NBYTES may be fractional: an average)."""
    points = direction["bandwidth_gbps"]
    gbps = points[0][1]
    if nbytes >= points[-1][0]:
        gbps = points[-1][1]
    elif nbytes > points[0][0]:
        for (b0, g0), (b1, g1) in zip(points, points[1:]):
            if b0 <= nbytes < b1:
                at = (math.log2(nbytes) - math.log2(b0)) / (math.log2(b1) - math.log2(b0))
                gbps = g0 + (g1 - g0) * at
                break
    return direction["overhead_ns"] + math.ceil(nbytes / gbps)


def eviction_cost_ns(gpu, link, pages):
    """The simulator's cost of evicting a chunk holding PAGES 64 KB pages (Migrator::
    eviction_cost and the reverse link's copy; PAGES may be fractional: an average), from the
    profile's and its host link's JSON."""
    return (gpu["eviction_ns"] + pages * gpu.get("eviction_page_ns", 0)
            + transfer_ns(link["reverse"], pages * 65536))


def full_chunk_price(call_ns, fill, gpu, link):
    """A median call's time on chunks holding FILL of their pages, as a full chunk's: scaled by
    the calibrated profile's cost of a full chunk over one of that fill."""
    pages = BLOCK // 65536
    fill = min(fill, 1.0)
    return round(call_ns * eviction_cost_ns(gpu, link, pages)
                 / eviction_cost_ns(gpu, link, pages * fill))


def summarise(rows):
    priced = [r for r in rows if "not_priced" not in r]
    out = {"runs": len(rows), "priced": len(priced)}
    for key in ("error_calibrated", "error_run_priced"):
        values = [abs(r[key]) for r in priced]
        out[f"median_abs_{key}"] = statistics.median(values) if values else None
        out[f"max_abs_{key}"] = max(values) if values else None
    out["priced_beyond_15_percent"] = {
        k: sum(abs(r[k]) > 0.15 for r in priced) for k in ("error_calibrated", "error_run_priced")}
    return out


def markdown(result):
    s = result["summary"]
    pct = lambda x: "-" if x is None else f"{x:+.1%}"  # noqa: E731
    lines = [f"{s['priced']} of {s['runs']} runs priced; the calibration prices a chunk's eviction "
             f"with its copy at {result['calibration_price_ns'] / 1e3:.0f} us. |time error| "
             f"median / max at the calibration's price {s['median_abs_error_calibrated']:.1%} / "
             f"{s['max_abs_error_calibrated']:.1%}, at each run's own "
             f"{s['median_abs_error_run_priced']:.1%} / {s['max_abs_error_run_priced']:.1%}; "
             f"beyond 15%: {s['priced_beyond_15_percent']['error_calibrated']} and "
             f"{s['priced_beyond_15_percent']['error_run_priced']}.", "",
             "| run | live s | its median eviction call (us) | as a full chunk (us) | evictions' "
             "CPU share | chunks' fill (simulated) | error, calibrated | error at its price |",
             "|---|---|---|---|---|---|---|---|"]
    for r in result["runs"]:
        run = f"{r['trace']} {r['policy']} {r['budget']:.0%}" + (
            f" (pass {r['repeat']})" if r["repeat"] > 1 else "")
        price = " | ".join(f"{r[k] / 1e3:.0f}" if r.get(k) else "-"
                           for k in ("call_ns", "price_ns"))
        share = f"{r['eviction_share']:.0%}" if "eviction_share" in r else "-"
        fill = "-" if r.get("chunk_fill") is None else f"{r['chunk_fill']:.0%}"
        share = f"{share} | {fill}"
        if "not_priced" in r:
            lines.append(f"| {run} | {r['live_s']:.3f} | {price} | {share} | "
                         f"{pct(r.get('error_calibrated'))} | not priced: {r['not_priced']} |")
        else:
            lines.append(f"| {run} | {r['live_s']:.3f} | {price} | {share} | "
                         f"{pct(r['error_calibrated'])} | {pct(r['error_run_priced'])} |")
    return "\n".join(lines) + "\n"


def price_runs(args, runs, profiles_dir):
    """The runs simulated as calibrated and, those priced, at their own price; the result."""
    name, calibration, shipped, refit = refit_args(args.data_dir)
    traces_revision = load_manifest(args.data_dir).get("traces_revision")

    profiles = {}  # price (None: as calibrated) -> the refitted profile

    def simulate(jobs):
        """Each (run, price) simulated with the profile at that price; the runs get the times."""
        for p in sorted({p for _, p in jobs} - set(profiles), key=lambda p: p or 0):
            profiles[p] = profile_at(args.faultline, refit, name, p, profiles_dir, shipped)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            sims = list(pool.map(lambda j: fidelity.simulate(
                args.faultline, profiles[j[1]],
                replayed_trace(j[0]["trace_path"], j[0]["revision"], traces_revision), j[0]["policy"],
                j[0]["budget"]), jobs))
        for (run, price), sim in zip(jobs, sims):
            if "error" in sim:
                raise SystemExit(f"run_priced: simulating {run['trace']} {run['policy']} "
                                 f"{run['budget']}: {sim['error']}")
            key = "calibrated" if price is None else "run_priced"
            run[f"sim_{key}_s"] = round(sim["results"]["total_time_ns"] / 1e9, 4)
            run[f"error_{key}"] = run[f"sim_{key}_s"] / run["live_s"] - 1
            if price is None:
                run["chunk_fill"] = chunk_fill(sim["results"])
        return sims[0]["faultline"]["git_revision"]

    revision = simulate([(r, None) for r in runs])
    gpu, link = calibrated_profile(profiles[None])
    for run in runs:
        fill = run["chunk_fill"]
        if "not_priced" in run:
            continue
        if fill is None or fill < MIN_FILL:
            run["not_priced"] = ("no budget eviction simulated (the policy's own evictions: "
                                 "their chunks' fill is not counted)" if fill is None else
                                 f"its evicted chunks held {fill:.0%} of their pages "
                                 f"(simulated), under {MIN_FILL:.0%}")
        else:
            run["price_ns"] = full_chunk_price(run["call_ns"], fill, gpu, link)
    simulate([(r, r["price_ns"]) for r in runs if "not_priced" not in r])
    for run in runs:  # what the simulator was given, not part of the report
        del run["trace_path"], run["revision"]
    return {"campaign": repo_relative(os.path.abspath(args.data_dir)),
            "calibration": repo_relative(calibration),
            "calibration_price_ns": calibration_price(calibration),
            "sim_revision": revision,
            "summary": summarise(runs), "runs": runs}


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--faultline", default="build/faultline")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    try:
        logs = eviction_logs(args.data_dir)
        runs = priced_runs(args.data_dir, logs)
    except (OSError, ValueError) as e:
        raise SystemExit(f"run_priced: {e}") from None
    if not any("not_priced" not in r for r in runs):
        raise SystemExit(f"run_priced: {args.data_dir}: no run has a priced eviction log "
                         "(`campaign.sh replay` with CALL_LOG=1, cut to its eviction rows)")
    os.makedirs(args.out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as profiles_dir:  # refitted profiles, not kept
        result = price_runs(args, runs, profiles_dir)
    write_json(os.path.join(args.out_dir, "run_priced.json"), result)
    with open(os.path.join(args.out_dir, "run_priced.md"), "w") as f:
        f.write(markdown(result))
    print(markdown(result).splitlines()[0])
