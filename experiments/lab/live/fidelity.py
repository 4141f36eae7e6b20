"""The fidelity report: the simulator against the GPU on the same experiments.

    experiments/live/fidelity.py simulate LIVE_DIR OUT_DIR [--gpu PROFILE] [--faultline BIN]

LIVE_DIR is a campaign (experiments/live/data/NAME/): what experiments/campaign.sh replay wrote
on the GPU machine, one result per live replay, and its manifest.json, whose refusals are the
runs the replay could not make. For every live result this runs `faultline sim` with the same
trace, policy and budget (read from the result), the GPU profile PROFILE (default: the
manifest's gpu_profile, else h200) and capacity mode "budget" (the live replay's budget
semantics), and writes into OUT_DIR. PROFILE is a name in configs/gpus/ or the path of a profile
that `faultline calibrate --out-dir` wrote (relative paths are taken from LIVE_DIR: a campaign
of experiments/campaign.sh live carries its instance's profile in profile/gpus/); its host link
is then the links/ file beside it that the profile names.
  fidelity.csv / fidelity.md  one row per run: time, faults and bytes each way, live and simulated
  summary.json                median and max relative time error, ranking agreement per
                              (trace, budget), byte errors over the drained runs whose counters
                              conserve bytes (excess_bytes_back; the others listed in
                              bytes_not_conserved), the sim configs' common part, the git revision
  fidelity.png                simulated against live time, and the error of every run
"""
import argparse
import concurrent.futures
import itertools
import json
import os
import shutil
import statistics
import subprocess

import lab.sim
from lab.campaigns import load_manifest, load_runs, median_of_repeats, refusals, repo_relative, trace_name
from lab.paths import REPO
from lab.sim import SimulationError, extracted_at, replayed_trace, trace_stats
from lab.tables import pyplot, save_figure, write_csv, write_json, write_lines

SUMMARY = "any folder of live results against the simulator, one profile"

POLICIES = ["ondemand", "deepum", "pump", "oracle"]


def profile_keys(gpu):
    """The run config's machine keys for PROFILE: {"gpu": NAME}, or for a calibrated profile's
    path {"gpu": PATH, "host_link": the links/ file beside it that the profile names}, and
    "peer_link" too where a calibration on two GPUs measured one into links/."""
    if not gpu.endswith(".json"):
        return {"gpu": gpu}
    try:
        with open(gpu) as f:
            doc = json.load(f)
        link = doc["host_link"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"fidelity: {gpu}: expected a GPU profile with a host_link "
                         f"(faultline calibrate --out-dir writes one): {e!r}") from None
    links = os.path.join(os.path.dirname(os.path.dirname(gpu)), "links")
    out = {"gpu": gpu, "host_link": os.path.join(links, link + ".json")}
    if isinstance(doc.get("peer_link"), str):
        peer = os.path.join(links, doc["peer_link"] + ".json")
        if os.path.isfile(peer):  # else a shipped link profile, found by its name
            out["peer_link"] = peer
    return out


# Costs that benchmarks newer than some campaigns' calibrations measure: a campaign's own
# profile without them takes them from its GPU model's shipped profile (the report says so).
# Each with what its benchmark measures, as the results README says it.
LATER_KEYS = {
    "discarded_resident_fault_ns": "faults on pages a policy discarded, `experiments/live/data/"
                                   "h200-migration-mix/`",
    "discarded_fault_ns": "the same in a block with no page on the GPU",
    "host_populate_ns": "the host's first touch of never-touched memory, `configs/README.md`",
    "eviction_run_ns": "evicted chunks holding spread pages against one run, `experiments/live/"
                       "data/h200-2f4aa42a/`",
    "eviction_populate_ns": "evicting a chunk the GPU populated in part, `experiments/live/data/"
                            "h200-d5a16a75/`"}


def filled_profile(gpu, shipped, out_dir, later=LATER_KEYS):
    """The campaign's own profile at path `gpu`, or, when it lacks keys of LATER (default
    LATER_KEYS), a copy in out_dir/profile/ (its host link beside it) with them from
    configs/gpus/SHIPPED.json; and the keys so filled."""
    with open(gpu) as f:
        doc = json.load(f)
    missing = [k for k in later if k not in doc]
    if not missing or not shipped:
        return gpu, []
    with open(os.path.join(REPO, "configs", "gpus", shipped + ".json")) as f:
        model = json.load(f)
    missing = [k for k in missing if k in model]
    if not missing:
        return gpu, []
    for k in missing:
        doc[k] = model[k]
    doc["sources"] = doc.get("sources", []) + [
        f"{', '.join(missing)}: from the shipped profile {shipped} (configs/gpus/{shipped}.json), "
        "measured by a benchmark this calibration predates"]
    keys = profile_keys(gpu)
    for sub in ("gpus", "links"):
        os.makedirs(os.path.join(out_dir, "profile", sub), exist_ok=True)
    for link in (keys[k] for k in ("host_link", "peer_link") if k in keys):
        shutil.copyfile(link, os.path.join(out_dir, "profile", "links", os.path.basename(link)))
    path = os.path.abspath(os.path.join(out_dir, "profile", "gpus", os.path.basename(gpu)))
    with open(path, "w") as f:
        json.dump(dict(sorted(doc.items())), f, indent=2)
        f.write("\n")
    return path, missing


def refit(faultline, args, name, out_dir, caller):
    """`faultline calibrate ARGS --name NAME --out-dir OUT_DIR`; the fitted profile's path.
    Where calibrate fails, SystemExit naming CALLER and calibrate's last line of error."""
    out = subprocess.run([faultline, "calibrate", *args, "--name", name, "--out-dir", out_dir],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{caller}: faultline calibrate {' '.join(args)}: "
                         + (out.stderr.strip().splitlines() or ["failed"])[-1])
    return os.path.abspath(os.path.join(out_dir, "gpus", name + ".json"))


def shipped_fault_path_differs(calibration, shipped):
    """Whether the calibration is a per-machine one (its measurements keep a fault path:
    `fault_path_from`) whose fault path the shipped profile SHIPPED no longer has."""
    if not shipped or not os.path.exists(calibration):
        return False
    with open(calibration) as f:
        kept = json.load(f)["measurements"].get("fault_path_from")
    if not kept:
        return False
    with open(os.path.join(REPO, "configs", "gpus", shipped + ".json")) as f:
        now = json.load(f)
    with open(os.path.join(REPO, "configs", "links", now["host_link"] + ".json")) as f:
        now["copy_overhead_ns"] = json.load(f)["forward"]["overhead_ns"]  # the link's, kept too
    return not all(now.get(k) == v for k, v in kept.items() if k != "profile")


def with_shipped_fault_path(gpu, shipped, out_dir, faultline):
    """The campaign's own profile at path `gpu`, or, when it is a per-machine calibration
    (its measurements keep a fault path: `fault_path_from`) whose fault path the shipped profile
    no longer has, the same measurements refitted with the shipped fault path as it is now
    (`calibrate --refit CAL --from SHIPPED`) into out_dir/profile/: a shipped fault path refitted
    since the campaign reaches every instance calibrated with the earlier one. Returns the
    profile's path and whether it was refitted."""
    name = os.path.basename(gpu)[:-len(".json")]
    calibration = os.path.join(os.path.dirname(os.path.dirname(gpu)), "calibration", name + ".json")
    if not shipped_fault_path_differs(calibration, shipped):
        return gpu, False
    out = subprocess.run([faultline, "calibrate", "--refit", calibration, "--from", shipped,
                          "--name", name, "--out-dir", os.path.join(out_dir, "profile")],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"fidelity: refitting {calibration} with {shipped}'s fault path: "
                         + (out.stderr.strip().splitlines() or ["failed"])[-1])
    return os.path.abspath(os.path.join(out_dir, "profile", "gpus", name + ".json")), True


def sim_config(gpu, policy, fraction):
    return {"description": "fidelity: the live replay's experiment in the simulator",
            **profile_keys(gpu),
            "capacity": {"fraction_of_footprint": fraction, "mode": "budget"},
            "policy": {"name": policy, "params": {}},
            "per_kernel": False}


def simulate(faultline, gpu, trace, policy, fraction):
    try:
        return lab.sim.simulate(trace, sim_config(gpu, policy, fraction), faultline)
    except SimulationError as e:
        return {"error": str(e)}


def read_live(live_dir):
    """Live runs, one per (trace, policy, budget): the repeats' median run, with all their times;
    and the runs the GPU machine refused (the campaign manifest's refusals)."""
    runs = []
    manifest = load_manifest(live_dir)
    for run in load_runs(live_dir):
        if run["budget"] is None:
            print(f"{run['path']}: skipped, its budget is in bytes, not a fraction of the footprint")
            continue
        run["live"] = run["results"]
        run["drained"] = drained(run["doc"], manifest.get("counters_drained"))
        runs.append(run)
    runs = median_of_repeats(runs)
    refused = [{"trace": trace_name(r["trace"]), "policy": r["policy"],
                "budget": r["budget"], "reason": r["message"]}
               for r in refusals(live_dir)]
    return runs, refused


def drained(doc, default=None):
    """Whether the run drained CUPTI's byte records after every kernel or eviction
    (`replay --drain-counters` or `--eviction-bytes`): only then are its bytes every byte the GPU
    moved (CUPTI loses records otherwise, experiments/live/data/bytes-back/), and the drains
    slow its timed kernels, so its time is not compared. DEFAULT: the campaign manifest's
    counters_drained, for runs made before results named it."""
    how = doc.get("config", {}).get("counters_drained", default or "at step boundaries")
    return how != "at step boundaries"


def excess_bytes_back(live, stats):
    """How many more bytes a run's counters say left the GPU than could have. Every byte back to
    the host arrived first (counted to the GPU), was populated there (each managed allocation at
    most once, again only after a discard) or is a second copy of a page the host read. Above 0
    the counters lost bytes to the GPU or counted bytes back twice: such a run's bytes say
    nothing of the simulator's."""
    bound = (stats["allocated_managed_bytes"] + stats["host_read_bytes"]
             + live.get("discarded_bytes", 0))
    return live["bytes_gpu_to_host"] - live["bytes_host_to_gpu"] - bound


def gb(results, key):
    """A byte count of a result in GB; None where the run did not count it (a replay without
    CUPTI's counters, `replay --counters`)."""
    return results[key] / 1e9 if key in results else None


def gb_pair(live, sim):
    """'live / sim' in GB, '- / sim' where the replay did not count the bytes."""
    return f"{'-' if live is None else format(live, '.1f')} / {sim:.1f}"


def row_of(run, sim, stats=None):
    live = run["live"]
    res = sim["results"]
    counted = "bytes_gpu_to_host" in live
    excess = excess_bytes_back(live, stats) if stats and counted else None
    return {"trace": run["trace"], "policy": run["policy"], "budget": run["budget"],
            "live_s": live["total_time_ns"] / 1e9, "sim_s": res["total_time_ns"] / 1e9,
            "live_repeats": len(run["repeats_s"]),
            "live_min_s": run["repeats_s"][0], "live_max_s": run["repeats_s"][-1],
            "by_repeat": run["by_repeat"],
            # A drained run's time is not the replay's (the drains slow it): no error.
            "time_error": None if run["drained"] else
            res["total_time_ns"] / live["total_time_ns"] - 1,
            "live_htod_gb": gb(live, "bytes_host_to_gpu"),
            "sim_htod_gb": res["bytes_host_to_gpu"] / 1e9,
            "live_dtoh_gb": gb(live, "bytes_gpu_to_host"),
            "sim_dtoh_gb": res["bytes_gpu_to_host"] / 1e9,
            "counters_drained": run["drained"],
            # Drained runs only (bytes_conserved): their counters' bytes back beyond what could
            # have left the GPU, more than 1% of what the trace allocates.
            "bytes_conserved": None if excess is None else
            excess <= 0.01 * stats["allocated_managed_bytes"],
            "excess_bytes_back_gb": None if excess is None else round(max(0, excess) / 1e9, 3),
            "live_fault_records": live.get("faults"), "sim_faults": res["faults"],
            "sim_fault_batches": res.get("fault_batches", "")}


SIM_TIE = 0.005  # simulated times this close are a tie: the two policies did the same


def sim_order_text(group):
    """The simulated order, fastest first, with policies the simulator ties joined by '='."""
    g = sorted(group, key=lambda r: r["sim_s"])
    text = g[0]["policy"]
    for prev, r in zip(g, g[1:]):
        tie = r["sim_s"] - prev["sim_s"] <= SIM_TIE * prev["sim_s"]
        text += (" = " if tie else ", ") + r["policy"]
    return text


def ordered_differently(a, b):
    """Whether the simulator orders two runs otherwise than the GPU, a tie in the simulator
    against an order on the GPU counting as otherwise: (differs, sim_tie)."""
    sim_tie = abs(a["sim_s"] - b["sim_s"]) <= SIM_TIE * min(a["sim_s"], b["sim_s"])
    return sim_tie or (a["live_s"] < b["live_s"]) != (a["sim_s"] < b["sim_s"]), sim_tie


def repeats_overlap(a, b):
    """Whether the GPU's repeats of two runs overlap (then it does not separate them); None with
    one run of either."""
    if a["live_repeats"] < 2 or b["live_repeats"] < 2:
        return None
    return a["live_min_s"] <= b["live_max_s"] and b["live_min_s"] <= a["live_max_s"]


def rankings(rows):
    """Per (trace, budget) with at least two policies: the order by live (median) and by simulated
    time, and the pairs ordered differently (a tie in the simulator against an order on the GPU
    counts as different), each marked whether its repeats on the GPU overlap (then the GPU does
    not separate the two). A group is consistent with the GPU when every pair ordered differently
    is one the GPU does not separate. Also whether every repeat on the GPU gives the same order."""
    groups = {}
    for r in rows:
        groups.setdefault((r["trace"], r["budget"]), []).append(r)
    out = []
    for (trace, budget), g in sorted(groups.items()):
        if len(g) < 2:
            continue
        live = [r["policy"] for r in sorted(g, key=lambda r: r["live_s"])]
        sim = [r["policy"] for r in sorted(g, key=lambda r: r["sim_s"])]
        swapped = []
        for a, b in itertools.combinations(g, 2):
            differs, sim_tie = ordered_differently(a, b)
            if not differs:
                continue
            overlap = repeats_overlap(a, b)
            gap = abs(a["live_s"] - b["live_s"]) / min(a["live_s"], b["live_s"])
            swapped.append({"pair": [a["policy"], b["policy"]], "live_gap": gap,
                            "sim_tie": sim_tie, "repeats_overlap": overlap})
        repeats = set.intersection(*(set(r["by_repeat"]) for r in g))
        orders = {tuple(sorted(live, key=lambda p: next(r for r in g if r["policy"] == p)
                               ["by_repeat"][k])) for k in repeats}
        out.append({"trace": trace, "budget": budget, "live": live, "sim": sim,
                    "sim_text": sim_order_text(g), "same": not swapped, "swapped": swapped,
                    "consistent": all(s["repeats_overlap"] for s in swapped),
                    "gpu_repeats_agree": len(orders) == 1 if len(repeats) > 1 else None})
    return out


def write_tables(rows, refused, ranks, out_dir):
    write_csv(os.path.join(out_dir, "fidelity.csv"), rows)
    lines = ["| trace | policy | budget | time GPU (median; range of repeats) | time sim | error "
             "| HtoD GPU / sim (GB) | DtoH GPU / sim (GB) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        spread = (f" ({r['live_min_s']:.3f}-{r['live_max_s']:.3f}, {r['live_repeats']} runs)"
                  if r["live_repeats"] > 1 else "")
        lines.append(f"| {r['trace']} | {r['policy']} | {r['budget']:.0%} | {r['live_s']:.3f} s"
                     f"{spread} "
                     f"| {r['sim_s']:.3f} s | "
                     f"{'drained, not timed' if r['counters_drained'] else format(r['time_error'], '+.0%')} "
                     f"| {gb_pair(r['live_htod_gb'], r['sim_htod_gb'])} "
                     f"| {gb_pair(r['live_dtoh_gb'], r['sim_dtoh_gb'])} |")
    lines += ["", "Policy ranking, fastest first (GPU medians | simulated); pairs ordered "
              "differently, with their gap on the GPU and whether their repeats overlap:", "",
              "| trace | budget | GPU | simulator (= a tie) | same | consistent with the GPU's "
              "spread | pairs ordered differently | GPU repeats agree |",
              "|---|---|---|---|---|---|---|---|"]
    yes_no = {True: "yes", False: "no"}
    overlap_note = {True: ", repeats overlap", False: "", None: ", one run each"}
    for k in ranks:
        pairs = "; ".join(f"{' / '.join(s['pair'])} {s['live_gap']:.0%} apart"
                          f"{', tied in the simulator' if s['sim_tie'] else ''}"
                          f"{overlap_note[s['repeats_overlap']]}"
                          for s in k["swapped"])
        lines.append(f"| {k['trace']} | {k['budget']:.0%} | {', '.join(k['live'])} "
                     f"| {k['sim_text']} | {yes_no[k['same']]} | {yes_no[k['consistent']]} "
                     f"| {pairs} "
                     f"| {yes_no.get(k['gpu_repeats_agree'], '')} |")
    if refused:
        lines += ["", "Not run live (the replay's message):", ""]
        for r in refused:
            lines.append(f"- {r['trace']} {r['policy']} {r['budget']:.0%}: {r['reason']}")
    write_lines(os.path.join(out_dir, "fidelity.md"), lines)


def plot(rows, out_path):
    timed = [r for r in rows if not r["counters_drained"]]
    if not timed:
        return plot_bytes(rows, out_path)
    rows = timed
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.8))
    markers = {"ondemand": "o", "deepum": "s", "pump": "^", "oracle": "D"}
    for p in POLICIES:
        pts = [r for r in rows if r["policy"] == p]
        a.scatter([r["live_s"] for r in pts], [r["sim_s"] for r in pts], marker=markers[p],
                  label=p, alpha=0.8)
    lo = min(min(r["live_s"], r["sim_s"]) for r in rows) * 0.8
    hi = max(max(r["live_s"], r["sim_s"]) for r in rows) * 1.2
    a.plot([lo, hi], [lo, hi], "k--", linewidth=0.8, label="simulated = GPU")
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel("time on the GPU (s)")
    a.set_ylabel("simulated time (s)")
    a.legend()
    a.set_title("simulator against GPU, every run")
    traces = sorted({r["trace"] for r in rows})
    for i, t in enumerate(traces):
        for j, p in enumerate(POLICIES):
            pts = [r for r in rows if r["trace"] == t and r["policy"] == p]
            b.scatter([i + (j - 1.5) * 0.15] * len(pts), [100 * r["time_error"] for r in pts],
                      marker=markers[p], color=f"C{j}", label=p if i == 0 else None)
    b.axhline(0, color="k", linewidth=0.8)
    b.axhspan(-10, 10, color="0.9")
    b.set_xticks(range(len(traces)))
    b.set_xticklabels(traces, rotation=20)
    b.set_ylabel("time error (%), simulated vs GPU")
    b.set_title("error per run (grey: within 10%)")
    fig.tight_layout()
    save_figure(fig, out_path)


def plot_bytes(rows, out_path):
    """A campaign of drained runs only: bytes each way, simulated against the GPU."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, way, title in zip(axes, ("htod", "dtoh"), ("host to GPU", "GPU to host")):
        for r in rows:
            ax.scatter(r[f"live_{way}_gb"], r[f"sim_{way}_gb"], label=f"{r['trace']} {r['policy']}")
        hi = max(max(r[f"live_{way}_gb"], r[f"sim_{way}_gb"]) for r in rows) * 1.1
        ax.plot([0, hi], [0, hi], "k--", linewidth=0.8)
        ax.set_xlabel(f"GB {title} on the GPU (CUPTI, drained)")
        ax.set_ylabel(f"GB {title} simulated")
        ax.set_title(f"bytes {title}, every run")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out_path)


def byte_errors(rows, way, drained_runs=True, conserved_only=True):
    """|simulated / live - 1| of the bytes moved one way (htod or dtoh), over the runs that moved
    at least 64 MB that way live (below that a ratio says nothing) and drained their counters
    (or, with drained_runs False, did not: a lower bound on the live bytes); of drained runs,
    only those whose counters conserve bytes unless conserved_only is False."""
    return [abs(r[f"sim_{way}_gb"] / r[f"live_{way}_gb"] - 1) for r in rows
            if r[f"live_{way}_gb"] >= 0.064 and r["counters_drained"] == drained_runs
            and (not conserved_only or r["bytes_conserved"] is not False)]


def byte_summary(rows):
    """The byte errors of the runs that drained CUPTI's records (the others' live bytes are lower
    bounds, records lost): of those whose counters conserve bytes (excess_bytes_back), their
    median and max each way; all_drained_* count the others too. Rows of several campaigns may
    be pooled (results.py: a set's drained runs made on more than one instance)."""
    errors = {way: byte_errors(rows, way) for way in ("htod", "dtoh")}
    all_drained = {way: byte_errors(rows, way, conserved_only=False) for way in ("htod", "dtoh")}
    return {"drained_runs": sum(r["counters_drained"] for r in rows),
            "bytes_runs": sum(r["bytes_conserved"] is True for r in rows),
            "bytes_not_conserved": [{"trace": r["trace"], "policy": r["policy"],
                                     "budget": r["budget"],
                                     "excess_bytes_back_gb": r["excess_bytes_back_gb"]}
                                    for r in rows if r["bytes_conserved"] is False],
            **{f"{name}_abs_{way}_error": stat(f, e)
               for way, e in errors.items()
               for name, f in (("median", statistics.median), ("max", max))},
            **{f"all_drained_median_abs_{way}_error": stat(statistics.median, e)
               for way, e in all_drained.items()}}


def stat(f, values):
    return f(values) if values else None


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("live_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--gpu", help="the GPU profile (default: the campaign's gpu_profile)")
    ap.add_argument("--faultline", default="build/faultline")
    ap.add_argument("--jobs", type=int, default=2, help="threads to simulate on")
    args = ap.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    args.gpu = args.gpu or load_manifest(args.live_dir).get("gpu_profile", "h200")
    if args.gpu.endswith(".json") and not os.path.isabs(args.gpu):
        args.gpu = os.path.abspath(os.path.join(args.live_dir, args.gpu))
    calibrated, filled, refitted = args.gpu, [], False
    if args.gpu.endswith(".json"):
        shipped = load_manifest(args.live_dir).get("shipped_profile")
        args.gpu, refitted = with_shipped_fault_path(args.gpu, shipped, args.out_dir,
                                                     args.faultline)
        args.gpu, filled = filled_profile(args.gpu, shipped, args.out_dir)
    runs, refused = read_live(args.live_dir)
    order = {p: i for i, p in enumerate(POLICIES)}
    runs.sort(key=lambda r: (r["trace"], -r["budget"], order.get(r["policy"], 99)))
    traces_revision = load_manifest(args.live_dir).get("traces_revision")
    traces = [replayed_trace(r["trace_path"], r["revision"], traces_revision) for r in runs]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        sims = list(pool.map(lambda rt: simulate(args.faultline, args.gpu, rt[1],
                                                 rt[0]["policy"], rt[0]["budget"]),
                             zip(runs, traces)))
    # Traces recaptured since the campaign are simulated as they were when it replayed them.
    traces_at = {} if traces_revision else {
        r["trace"]: extracted_at(t) for r, t in zip(runs, traces) if extracted_at(t)}
    # A drained run's bytes are checked against its trace's allocations and host reads.
    stats = {}
    rows, failed = [], []
    for run, trace, sim in zip(runs, traces, sims):
        if "error" in sim:
            failed.append({"trace": run["trace"], "policy": run["policy"],
                           "budget": run["budget"], "error": sim["error"]})
            continue
        if run["drained"] and trace not in stats:
            stats[trace] = trace_stats(trace, args.faultline)
        rows.append(row_of(run, sim, stats.get(trace) if run["drained"] else None))
    if not rows:
        raise SystemExit(f"fidelity: none of the {len(failed)} live runs could be simulated; "
                         "the first: " + json.dumps(failed[0]))
    ranks = rankings([r for r in rows if not r["counters_drained"]])
    errors = [abs(r["time_error"]) for r in rows if not r["counters_drained"]]
    undrained = {way: byte_errors(rows, way, False) for way in ("htod", "dtoh")}
    revision = next(s["faultline"]["git_revision"] for s in sims if "error" not in s)
    summary = {"runs": len(rows), "gpu_profile": repo_relative(calibrated),
               **({"filled_from_shipped_profile": filled} if filled else {}),
               **({"fault_path_refitted_from": shipped} if refitted else {}),
               "device": sorted({r["device"] for r in runs}),
               "live_revisions": sorted({r["revision"] for r in runs}),
               "sim_config": {k: repo_relative(v) if k in ("gpu", "host_link") else v
                              for k, v in sim_config(args.gpu, "POLICY", "BUDGET").items()},
               "sim_revision": revision,
               **({"traces_at_revision": dict(sorted(traces_at.items()))} if traces_at else {}),
               "timed_runs": len(errors),
               "median_abs_time_error": stat(statistics.median, errors),
               "max_abs_time_error": stat(max, errors),
               "runs_within_10_percent": sum(e <= 0.10 for e in errors),
               **byte_summary(rows),
               **{f"undrained_median_abs_{way}_error": stat(statistics.median, e)
                  for way, e in undrained.items()},
               "rankings_same": sum(k["same"] for k in ranks), "rankings": len(ranks),
               "rankings_consistent_with_gpu_spread": sum(k["consistent"] for k in ranks),
               "pairs": sum(len(k["live"]) * (len(k["live"]) - 1) // 2 for k in ranks),
               "pairs_ordered_differently": sum(len(k["swapped"]) for k in ranks),
               "pairs_ordered_differently_beyond_gpu_spread":
                   sum(s["repeats_overlap"] is False for k in ranks for s in k["swapped"]),
               "repeats_per_run": sorted({r["live_repeats"] for r in rows}),
               "gpu_repeats_agree_on_ranking": sum(bool(k["gpu_repeats_agree"]) for k in ranks),
               "simulator_failed": failed, "not_runnable_live": refused}
    write_tables(rows, refused, ranks, args.out_dir)
    plot(rows, os.path.join(args.out_dir, "fidelity.png"))
    write_json(os.path.join(args.out_dir, "summary.json"), summary, newline=False)
    def pct(x):
        return "-" if x is None else f"{x:.1%}"
    print(f"{len(rows)} runs: median |time error| {pct(summary['median_abs_time_error'])}, "
          f"max {pct(summary['max_abs_time_error'])} ({len(errors)} timed runs); bytes of the "
          f"{summary['bytes_runs']} drained runs whose counters conserve bytes (of "
          f"{summary['drained_runs']}): median |HtoD error| "
          f"{pct(summary['median_abs_htod_error'])}, |DtoH error| "
          f"{pct(summary['median_abs_dtoh_error'])}; same ranking in "
          f"{summary['rankings_same']} of {len(ranks)} (trace, budget) groups "
          f"({summary['rankings_consistent_with_gpu_spread']} consistent with the GPU's spread); "
          f"{summary['pairs_ordered_differently']} of {summary['pairs']} pairs ordered differently, "
          f"{summary['pairs_ordered_differently_beyond_gpu_spread']} beyond the GPU's spread")
