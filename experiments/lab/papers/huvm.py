"""HUVM's evaluation in the simulator, beside the paper: tables, figures, claims (`run.py huvm`).

    experiments/papers/run.py huvm-report SWEEPS_DIR OUT_DIR [--claims PATH] [--readme PATH]

SWEEPS_DIR holds huvm-{consolidation-one,consolidation-two,spare,prefetch,ablation,peer-cost}/
results.json (configs/sweeps/huvm-*.json). Writes into OUT_DIR: results.md (the tables the README
shows), huvm.md (every point), consolidation.png (ours beside the paper's), spare.png,
prefetch.png, ablation.png, peer_cost.png, summary.json, claims.json. --claims PATH writes the
claims there as well; --readme PATH rewrites the part of that README between
`<!-- results:begin -->` and `<!-- results:end -->` with results.md.

The whole evaluation (`experiments/papers/run.py huvm`, run()), on HUVM's machine (p3.8xlarge):
the consolidation scenarios, the spare-memory, prefetch-size and peer-migration-cost sweeps and
the ablation (configs/sweeps/huvm-*.json), then this report, and peer_cost's reading of the
committed two-GPU live campaigns (experiments/multigpu/data/h200x2-*) into OUT_DIR/peer-cost-*/;
with --write-reports the claims also into experiments/papers/huvm/claims.json and the results
section of its README.
"""
import json
import os

from lab import steps
from lab.campaigns import trace_name
from lab.curves import crossing
from lab.papers import peer_cost
from lab.tables import finish_figure, markdown_table, pyplot, write_json, write_lines

SUMMARY = "HUVM's tables, figures and claims from its sweeps"

plt = pyplot()

# The paper's published numbers, each with its source. Only the headline is published in a form
# we could read: the per-case bars of Fig. 6 are not in our sources (the PDF's text was not
# available), so each case's paper value is the bound the headline gives.
PAPER = {
    "speedup_max": 2.71,
    "speedup_source": "Choi et al., \"Memory Harvesting in Multi-GPU Systems with Hierarchical "
                      "Unified Virtual Memory\", USENIX ATC'22, abstract: \"up to 2.71x performance "
                      "improvement compared to the prior approach\" (Fig. 6: Ours against "
                      "pre-ef-host, pre-eviction + local prefetch without the hierarchy)",
}
# HUVM's consolidation cases (casys-kaist/HUVM @ 4528f10, scripts/fig6/*.sh) and the scenario of
# ours that stands nearest to each: (our trace, neighbours) -> (paper case, its jobs, how near).
CASES = {
    ("pagerank", "1 neighbour"): (
        "4", "WCC + Louvain harvesting beside ResNet101 b64",
        "graph harvester, one DNN neighbour; our PageRank, not WCC/Louvain"),
    ("pagerank", "2 neighbours"): (
        "1", "PageRank (soc-twitter-2010) harvesting beside WCC and VGG16 b256 on 2 GPUs",
        "PageRank harvester, two neighbours; ResNet-50 and BERT-large, not WCC and VGG16"),
    ("stream", "2 neighbours"): (
        "2", "BFS (web-uk-2005) harvesting beside MobileNetV3-L b256 and ResNet101 b64",
        "a scan-heavy harvester beside two DNN neighbours; a stream microbenchmark, not BFS"),
    ("stream", "1 neighbour"): (
        "-", "(no counterpart)", "stream beside ResNet-50"),
}
PAPER_CASE_3 = ("3", "WCC + BFS harvesting beside PageRank (web-ClueWeb09-50m) on 2 GPUs",
                "not run: our neighbours are DNN traces on the stock driver, not a graph job")
VARIANTS = {"base": "stock UVM (ondemand)",
            "PE-host": "pre-eviction to the host, no prefetch",
            "pre-ef-host": "pre-eviction to the host + local prefetch (the paper's prior approach)",
            "+peer": "pre-eviction to the neighbour, no prefetch",
            "harvest": "memHarvester: pre-eviction to the neighbour + multi-path prefetch"}


def variant(policy):
    params = policy.get("params", {})
    if policy["name"] == "ondemand":
        return "base"
    to_peer = params.get("evict_to_peer", True)
    prefetch = params.get("multi_path_prefetch", True)
    if not to_peer:
        return "pre-ef-host" if prefetch else "PE-host"
    return "harvest" if prefetch else "+peer"


def factor(name, value):
    """A varied value as one number or word: GPU 0's peer-migration overhead per 2 MB for a
    topology (32 x its peer_fault_migrate_ns, per 64 KB), the switched-on HUVM options for a
    driver."""
    if name == "/topology":
        profile = value["gpus"][0]["profile"]
        return 32 * profile.get("peer_fault_migrate_ns", 0) if isinstance(profile, dict) else 0
    if isinstance(value, dict):
        on = [k for k in ("hierarchical_eviction", "block_eviction") if value.get(k)]
        return "+".join(on) or "stock"
    return value


def load(sweeps, name):
    with open(os.path.join(sweeps, f"huvm-{name}", "results.json")) as f:
        doc = json.load(f)
    rows = []
    for p in doc["points"]:
        pt, r = p["point"], p["results"]
        varied = {k: factor(k, v) for k, v in pt["varied"].items()}
        rows.append({"trace": trace_name(pt["trace"]), "variant": variant(pt["policy"]),
                     "varied": varied, "x": next(iter(varied.values()), None),
                     "time_s": r["total_time_ns"] / 1e9,
                     "to_peer_gb": r["peers"]["bytes_to_peer"] / 1e9,
                     "from_peer_gb": r["peers"]["bytes_from_peer"] / 1e9,
                     "h2d_gb": r["bytes_host_to_gpu"] / 1e9,
                     "neighbours": [{"name": j["name"], "passes": j["passes"],
                                     "time_s": j["results"]["total_time_ns"] / 1e9,
                                     "reclaims": j["results"]["peers"]["reclaims_dropped"] +
                                     j["results"]["peers"]["reclaims_copied"]}
                                    for j in p.get("neighbour_jobs", [])],
                     "revision": p["git_revision"], "config": p.get("config")})
    return rows


def pick(rows, **match):
    found = [r for r in rows if all(r[k] == v for k, v in match.items())]
    if len(found) != 1:
        raise SystemExit(f"huvm report: {len(found)} points match {match}")
    return found[0]


def speedup(rows, over, **match):
    return pick(rows, variant=over, **match)["time_s"] / pick(rows, variant="harvest", **match)["time_s"]


def consolidation_rows(cons):
    out = []
    for (trace, case), (pcase, pjobs, near) in CASES.items():
        m = {"trace": trace, "case": case}
        out.append({"trace": trace, "case": case, "paper_case": pcase, "paper_jobs": pjobs,
                    "nearness": near,
                    "over_pre_ef_host": speedup(cons, "pre-ef-host", **m),
                    "over_pe_host": speedup(cons, "PE-host", **m),
                    "over_base": speedup(cons, "base", **m),
                    "times_s": {v: pick(cons, variant=v, **m)["time_s"]
                                for v in ("base", "PE-host", "pre-ef-host", "harvest")}})
    return out


def plot_consolidation(rows, path):
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["over_pre_ef_host"] for r in rows], 0.4,
           label="ours: harvest / pre-ef-host (with local prefetch)")
    ax.bar([x + 0.2 for x in xs], [r["over_pe_host"] for r in rows], 0.4, alpha=0.6,
           label="ours: harvest / pre-eviction to host, no prefetch")
    ax.axhline(PAPER["speedup_max"], color="black", linestyle="--",
               label=f"paper: up to {PAPER['speedup_max']}x over pre-ef-host (max of its cases)")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['trace']}, {r['case']}\n(paper case {r['paper_case']})" for r in rows],
                       fontsize=8)
    finish_figure(fig, path, ax, ylabel="speedup of memHarvester", legend=7,
                  title="consolidation on p3.8xlarge (harvester at 50% of its footprint)")


def curves(rows, key=lambda r: r["x"]):
    out = {}
    for r in rows:
        out.setdefault(r["variant"], []).append((key(r), r["time_s"]))
    return {v: sorted(pts) for v, pts in out.items()}


def plot_lines(rows, scale, xlabel, path, title, paper_x=None):
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, pts in sorted(curves(rows).items()):
        ax.plot([x * scale for x, _ in pts], [y for _, y in pts], marker="o", label=name)
    if paper_x is not None:
        ax.axvline(paper_x, color="black", linestyle="--", label="the paper's default")
    finish_figure(fig, path, ax, xlabel, "harvester time (s)", title, legend=8)


def speedup_curve(rows):
    c = curves(rows)
    host = dict(c["pre-ef-host"])
    return [(x, host[x] / t) for x, t in c["harvest"] if x in host]


def plot_speedup_vs(points, scale, xlabel, path, title, level):
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot([x * scale for x, _ in points], [y for _, y in points], marker="o",
            label="ours: harvest / pre-ef-host")
    ax.axhline(level, color="black", linestyle="--", label=f"paper: up to {level}x")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    finish_figure(fig, path, ax, xlabel, "speedup", title, legend=8)


def ablation(rows, path):
    def driver(r):
        d = r["varied"]["/driver"]
        return ("hierarchical_eviction" in d, "block_eviction" in d)
    # HUVM's Fig. 7 order: the hierarchy in the driver, then pre-eviction (to the neighbour),
    # large-page eviction, multi-path prefetch.
    order = [("base", (False, False)), ("base", (True, False)), ("+peer", (True, False)),
             ("+peer", (True, True)), ("harvest", (True, True))]
    labels = ["base", "H", "+PE", "+LP", "+MPF"]
    ys = [next(r["time_s"] for r in rows if r["variant"] == v and driver(r) == d) for v, d in order]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.bar(labels, ys)
    finish_figure(fig, path, ax, ylabel="pagerank time (s)",
                  title="ablation (HUVM Fig. 7 order), each step adding to the last")
    return dict(zip(labels, ys))


def every_point(groups, path):
    lines = []
    for name, rows in groups.items():
        lines += [f"## {name}", ""]
        lines += markdown_table(
            ["trace", "variant", "varied", "time s", "to peer GB", "from peer GB", "host->GPU GB",
             "neighbours (passes, time s, reclaimed chunks)"],
            [[r["trace"], r["variant"],
              ", ".join(f"{k.split('/')[-1]}={v}" for k, v in r["varied"].items()) or "-",
              f"{r['time_s']:.3f}", f"{r['to_peer_gb']:.1f}", f"{r['from_peer_gb']:.1f}",
              f"{r['h2d_gb']:.1f}",
              "; ".join(f"{j['name']} {j['passes']}x {j['time_s']:.2f} s {j['reclaims']}"
                        for j in r["neighbours"])] for r in rows])
        lines.append("")
    write_lines(path, lines)


def fmt_x(value, unit, scale=1.0):
    return "never in the sweep" if value is None else f"{value * scale:.0f} {unit}"


def results_md(cons_rows, summary, spare_pts, cost_pts, prefetch, ablation_s):
    top = max(cons_rows, key=lambda r: r["over_pre_ef_host"])
    lines = ["Speedup of memHarvester (`harvest`) over the paper's prior approach (`pre-ef-host`:",
             "pre-eviction to the host and local prefetch, no hierarchy); the paper's value is",
             f"its headline, the maximum over its four cases ({PAPER['speedup_max']}x); its",
             "per-case bars are not in our sources. Our two other baselines for comparison.", ""]
    lines += markdown_table(
        ["paper case (its jobs)", "ours (harvester, neighbours)", "paper: Ours / pre-ef-host",
         "ours: / pre-ef-host", "ours: / pre-eviction only", "ours: / stock UVM"],
        [[f"{r['paper_case']}: {r['paper_jobs']}", f"{r['trace']}, {r['case']}",
          f"up to {PAPER['speedup_max']}" if r["paper_case"] != "-" else "-",
          f"**{r['over_pre_ef_host']:.2f}**", f"{r['over_pe_host']:.2f}",
          f"{r['over_base']:.2f}"] for r in cons_rows] +
        [[f"{PAPER_CASE_3[0]}: {PAPER_CASE_3[1]}", PAPER_CASE_3[2], f"up to {PAPER['speedup_max']}",
          "-", "-", "-"],
         ["**maximum over the cases** (the headline)", f"{top['trace']}, {top['case']}",
          f"**{PAPER['speedup_max']}**", f"**{summary['max_over_pre_ef_host']:.2f}**",
          f"{max(r['over_pe_host'] for r in cons_rows):.2f}",
          f"{max(r['over_base'] for r in cons_rows):.2f}"]])
    lines += ["", "Harvester time (s) per variant:", ""]
    lines += markdown_table(
        ["scenario", "stock UVM", "pre-eviction only", "pre-ef-host", "harvest"],
        [[f"{r['trace']}, {r['case']}"] + [f"{r['times_s'][v]:.3f}" for v in
                                           ("base", "PE-host", "pre-ef-host", "harvest")]
         for r in cons_rows])
    lines += ["", "The factors, each swept alone on PageRank beside ResNet-50 (speedup over "
              "pre-ef-host):", ""]
    lines += markdown_table(
        ["factor (sweep)", "values: speedup", f"where it falls to the paper's {PAPER['speedup_max']}x",
         "where harvest stops winning"],
        [["GPU 0's peer-migration overhead beyond the copy, µs per 2 MB moved between GPUs "
          "(`huvm-peer-cost`; V100 profile: 0 for faults, 10 per chunk evicted)",
          ", ".join(f"{x / 1e3:.0f}: {y:.2f}" for x, y in cost_pts),
          fmt_x(summary["peer_cost_at_paper_ns"], "µs", 1e-3),
          fmt_x(summary["peer_cost_break_even_ns"], "µs", 1e-3)],
         ["the neighbour's spare memory at its peak, % (`huvm-spare`; default 30)",
          ", ".join(f"{x * 100:.0f}: {y:.2f}" for x, y in spare_pts),
          fmt_x(summary["spare_at_paper"], "%", 100), fmt_x(summary["spare_break_even"], "%", 100)],
         ["the baseline's local prefetch (`huvm-consolidation-*`)",
          f"with: {top['over_pre_ef_host']:.2f}, without: {top['over_pe_host']:.2f} "
          f"({top['trace']}, {top['case']})", "-", "-"]])
    lines += ["", "Prefetch window (`huvm-prefetch`, harvest, PageRank beside ResNet-50; the paper's "
              "default is 16 chunks at stride 2, 32 MB fetched): "
              + ", ".join(f"{int(x) * 2} MB: {t:.3f} s" for x, t in curves(prefetch)["harvest"]) + ".",
              "", "Ablation (`huvm-ablation`, PageRank, HUVM's Fig. 7 order, each step adding to the "
              "last): " + ", ".join(f"{k} {v:.3f} s" for k, v in ablation_s.items()) + ".",
              "", f"Revision: {', '.join(summary['revisions'])}."]
    return lines


def claims(summary, top):
    return [{"paper": "HUVM (Choi et al., USENIX ATC'22)",
             "claim": "speedup of memHarvester over the prior approach (pre-ef-host: pre-eviction "
                      "to the host + local prefetch), maximum over the consolidation scenarios",
             "paper_value": PAPER["speedup_max"],
             "paper_source": PAPER["speedup_source"],
             "our_value": round(summary["max_over_pre_ef_host"], 2),
             "setting": "simulated p3.8xlarge (4x V100-16GB profiles, not calibrated; NVLink 2.0, "
                        "PCIe 3.0); harvester at 50% of its footprint on GPU 0, DNN neighbours "
                        "(ResNet-50 on GPU 3, BERT-large on GPU 1) repeating their 3-step traces "
                        "with 30% of their GPU spare; harvesters PageRank and stream (3 steps); "
                        f"our maximum: {top['trace']}, {top['case']}",
             "command": "experiments/papers/run.py huvm"}]


def splice(readme, lines):
    with open(readme) as f:
        text = f.read()
    begin, end = "<!-- results:begin -->", "<!-- results:end -->"
    head, sep, rest = text.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not sep or not sep2:
        raise SystemExit(f"huvm report: {readme} has no {begin} ... {end} section")
    with open(readme, "w") as f:
        f.write(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)


SWEEPS = ["consolidation-one", "consolidation-two", "spare", "prefetch", "ablation", "peer-cost"]
# The committed two-GPU live campaigns peer_cost reads the cost of a migration between GPUs from.
PEER_COST_CAMPAIGNS = ["h200x2-harvest", "h200x2-harvest-idle-neighbour"]


def run(out, claims_path, write_reports=False, sweep_args=()):
    """The whole evaluation, from the repository root: the sweeps (SWEEP_ARGS passed on:
    --jobs N), the report into OUT (with WRITE_REPORTS the claims also into CLAIMS_PATH and the
    results into the paper's README), then peer_cost of each campaign into OUT/peer-cost-NAME."""
    for s in SWEEPS:
        steps.faultline("sweep", f"configs/sweeps/huvm-{s}.json", *sweep_args)
    readme = "experiments/papers/huvm/README.md"
    extra = ["--claims", claims_path, "--readme", readme] if write_reports else []
    main(["out/sweeps", out] + extra)
    for c in PEER_COST_CAMPAIGNS:
        peer_cost.main([f"experiments/multigpu/data/{c}", f"{out}/peer-cost-{c}"])


def main(argv=None, prog=None):
    ap = steps.parser(__doc__, prog, "SWEEPS", "OUT")
    ap.add_argument("--claims")
    ap.add_argument("--readme")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    cons = []
    for case in ("one", "two"):
        for r in load(args.sweeps, f"consolidation-{case}"):
            r["case"] = "1 neighbour" if case == "one" else "2 neighbours"
            cons.append(r)
    spare, prefetch = load(args.sweeps, "spare"), load(args.sweeps, "prefetch")
    abl, cost = load(args.sweeps, "ablation"), load(args.sweeps, "peer-cost")
    cons_rows = consolidation_rows(cons)
    plot_consolidation(cons_rows, os.path.join(args.out, "consolidation.png"))
    plot_lines(spare, 100, "neighbour's spare memory at its peak (%)",
               os.path.join(args.out, "spare.png"), "spare memory (PageRank + ResNet-50)")
    plot_lines(prefetch, 2, "multi-path prefetch window, MB fetched (stride 2)",
               os.path.join(args.out, "prefetch.png"), "prefetch size (harvest)", paper_x=32)
    spare_pts, cost_pts = speedup_curve(spare), speedup_curve(cost)
    plot_speedup_vs(cost_pts, 1e-3, "peer-migration overhead beyond the copy, µs per 2 MB",
                    os.path.join(args.out, "peer_cost.png"),
                    "peer-migration cost (PageRank + ResNet-50)", PAPER["speedup_max"])
    ablation_s = ablation(abl, os.path.join(args.out, "ablation.png"))
    every_point({"consolidation": cons, "spare memory": spare, "prefetch size": prefetch,
                 "ablation": abl, "peer-migration cost": cost}, os.path.join(args.out, "huvm.md"))
    top = max(cons_rows, key=lambda r: r["over_pre_ef_host"])
    summary = {"paper": PAPER, "consolidation": cons_rows,
               "max_over_pre_ef_host": top["over_pre_ef_host"],
               "speedup_by_peer_cost_ns": cost_pts,
               "peer_cost_at_paper_ns": crossing(cost_pts, PAPER["speedup_max"]),
               "peer_cost_break_even_ns": crossing(cost_pts, 1.0),
               "speedup_by_spare": spare_pts,
               "spare_at_paper": crossing(spare_pts, PAPER["speedup_max"]),
               "spare_break_even": crossing(spare_pts, 1.0),
               "ablation_time_s": ablation_s,
               "revisions": sorted({r["revision"] for r in cons + spare + prefetch + abl + cost})}
    write_json(os.path.join(args.out, "summary.json"), summary, sort_keys=True)
    lines = results_md(cons_rows, summary, spare_pts, cost_pts, prefetch, ablation_s)
    write_lines(os.path.join(args.out, "results.md"), lines)
    doc = claims(summary, top)
    write_json(os.path.join(args.out, "claims.json"), doc)
    if args.claims:
        write_json(args.claims, doc)
    if args.readme:
        splice(args.readme, lines)
    print(json.dumps({"max_over_pre_ef_host": summary["max_over_pre_ef_host"],
                      "peer_cost_at_paper_ns": summary["peer_cost_at_paper_ns"],
                      "peer_cost_break_even_ns": summary["peer_cost_break_even_ns"]}))

