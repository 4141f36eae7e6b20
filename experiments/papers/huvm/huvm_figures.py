"""Figures and a table of the HUVM-shaped sweeps (experiments/multigpu/huvm.sh).

    python3 experiments/multigpu/huvm_figures.py SWEEPS_DIR OUT_DIR

SWEEPS_DIR holds huvm-{consolidation-one,consolidation-two,spare,prefetch,ablation}/results.json.
Writes OUT_DIR/huvm.md (every point), consolidation.png, spare.png, prefetch.png, ablation.png and
summary.json (speedups of harvest over host-only pre-eviction, the revisions).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402

plt = common.pyplot()


def variant(point):
    p = point["policy"]
    params = p.get("params", {})
    if p["name"] == "ondemand":
        return "base"
    if params.get("evict_to_peer") is False:
        return "pre-ef-host"
    if params.get("multi_path_prefetch") is False:
        return "+peer"
    return "harvest"


def load(sweeps, name):
    doc = json.load(open(os.path.join(sweeps, f"huvm-{name}", "results.json")))
    rows = []
    for p in doc["points"]:
        pt, r = p["point"], p["results"]
        rows.append({"trace": os.path.basename(pt["trace"]).split(".")[0], "variant": variant(pt),
                     "varied": pt["varied"], "time_s": r["total_time_ns"] / 1e9,
                     "to_peer_gb": r["peers"]["bytes_to_peer"] / 1e9,
                     "from_peer_gb": r["peers"]["bytes_from_peer"] / 1e9,
                     "h2d_gb": r["bytes_host_to_gpu"] / 1e9,
                     "neighbours": [{"name": j["name"], "passes": j["passes"],
                                     "time_s": j["results"]["total_time_ns"] / 1e9,
                                     "reclaims": j["results"]["peers"]["reclaims_dropped"] +
                                     j["results"]["peers"]["reclaims_copied"]}
                                    for j in p.get("neighbour_jobs", [])],
                     "revision": p["git_revision"]})
    return rows


def consolidation(rows, out):
    cases = sorted({(r["case"], r["trace"]) for r in rows})
    fig, ax = plt.subplots(figsize=(7, 3.6))
    names = ["base", "pre-ef-host", "harvest"]
    for i, name in enumerate(names):
        ys = []
        for case, trace in cases:
            base = next(r for r in rows if (r["case"], r["trace"], r["variant"]) == (case, trace, "base"))
            mine = next(r for r in rows if (r["case"], r["trace"], r["variant"]) == (case, trace, name))
            ys.append(base["time_s"] / mine["time_s"])
        ax.bar([j + (i - 1) * 0.27 for j in range(len(cases))], ys, 0.27, label=name)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{t}\n{c}" for c, t in cases])
    ax.set_ylabel("speedup over base (stock UVM)")
    ax.set_title("consolidation cases on p3.8xlarge (harvester at 50% of its footprint)")
    ax.legend()
    fig.tight_layout()
    common.save_figure(fig, os.path.join(out, "consolidation.png"))


def line(rows, key, xlabel, path, title):
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name in sorted({r["variant"] for r in rows}):
        pts = sorted((list(r["varied"].values())[0], r["time_s"]) for r in rows if r["variant"] == name)
        ax.plot([x * key for x, _ in pts], [y for _, y in pts], marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("harvester time (s)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    common.save_figure(fig, path)


def ablation(rows, out):
    def driver(r):
        d = r["varied"]["/driver"]
        return (d.get("hierarchical_eviction", False), d.get("block_eviction", False))
    # HUVM's Fig. 7 order: the hierarchy in the driver, then pre-eviction (to the neighbour),
    # large-page eviction, multi-path prefetch.
    steps = [("base", (False, False)), ("base", (True, False)), ("+peer", (True, False)),
             ("+peer", (True, True)), ("harvest", (True, True))]
    labels = ["base", "H (driver evicts\nto neighbour)", "+PE", "+LP (2 MB\ncopies)", "+MPF"]
    ys = [next(r["time_s"] for r in rows if r["variant"] == v and driver(r) == d)
          for v, d in steps]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.bar(labels, ys)
    ax.set_ylabel("pagerank time (s)")
    ax.set_title("ablation, each step adding to the last")
    fig.tight_layout()
    common.save_figure(fig, os.path.join(out, "ablation.png"))
    return {label.replace("\n", " "): y for label, y in zip(labels, ys)}


def short(value):
    """A varied value for the table: driver objects show only their switched-on HUVM options."""
    if isinstance(value, dict):
        on = [k for k in ("hierarchical_eviction", "block_eviction") if value.get(k)]
        return "+".join(on) or "stock"
    return value


def table(groups, path):
    lines = []
    for name, rows in groups.items():
        lines += [f"## {name}", "", "| trace | variant | varied | time s | to peer GB | from peer GB | "
                  "host->GPU GB | neighbours (passes, time s, reclaimed chunks) |", "|" + "---|" * 8]
        for r in rows:
            n = "; ".join(f"{j['name']} {j['passes']}x {j['time_s']:.2f} s {j['reclaims']}"
                          for j in r["neighbours"])
            varied = ", ".join(f"{k.split('/')[-1]}={short(v)}" for k, v in r["varied"].items()) or "-"
            lines.append(f"| {r['trace']} | {r['variant']} | {varied} | {r['time_s']:.3f} | "
                         f"{r['to_peer_gb']:.1f} | {r['from_peer_gb']:.1f} | {r['h2d_gb']:.1f} | {n} |")
        lines.append("")
    open(path, "w").write("\n".join(lines))


def main():
    sweeps, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    cons = []
    for case in ("one", "two"):
        for r in load(sweeps, f"consolidation-{case}"):
            r["case"] = "1 neighbour" if case == "one" else "2 neighbours"
            cons.append(r)
    spare, prefetch, abl = load(sweeps, "spare"), load(sweeps, "prefetch"), load(sweeps, "ablation")
    consolidation(cons, out)
    line(spare, 100, "neighbour's spare memory at its peak (%)", os.path.join(out, "spare.png"),
         "spare-memory sweep (pagerank + ResNet-50)")
    line(prefetch, 2, "multi-path prefetch window (MB)", os.path.join(out, "prefetch.png"),
         "prefetch-size sweep (harvest)")
    steps = ablation(abl, out)
    table({"consolidation": cons, "spare memory": spare, "prefetch size": prefetch,
           "ablation": abl}, os.path.join(out, "huvm.md"))
    speedups = {}
    for r in cons:
        if r["variant"] == "harvest":
            host = next(x for x in cons if (x["case"], x["trace"], x["variant"]) ==
                        (r["case"], r["trace"], "pre-ef-host"))
            speedups[f"{r['trace']}, {r['case']}"] = host["time_s"] / r["time_s"]
    summary = {"harvest_over_pre_ef_host": speedups, "max": max(speedups.values()),
               "ablation_time_s": steps,
               "revisions": sorted({r["revision"] for r in cons + spare + prefetch + abl})}
    common.write_json(os.path.join(out, "summary.json"), summary, sort_keys=True)
    print(json.dumps(summary["harvest_over_pre_ef_host"], indent=1))


if __name__ == "__main__":
    main()
