"""The README of experiments/live/results/GPU/ (results.py): the sets' table, where their bytes
come from, the hold-out sets on each instance and the instances' calibrations."""

from lab.live import speeds
from lab.live.fidelity import LATER_KEYS

# The policies of the sets' table, in its column order.
POLICIES = ["ondemand", "deepum", "pump", "oracle", "schedule"]


def bytes_cell(s, way):
    """A set's median byte error: from drained runs, else the undrained one, marked so."""
    if s[f"median_abs_{way}_error"] is not None:
        return pct(s[f"median_abs_{way}_error"])
    undrained = s.get(f"undrained_median_abs_{way}_error")
    return f"({pct(undrained)} undrained)" if undrained is not None else ""


def pct(x):
    return "" if x is None else f"{x:.1%}"


def holdout_table(held):
    """A hold-out set's campaigns, one a row: with their instance's calibration and the shipped
    profile."""
    lines = ["| campaign | runs | its instance's calibration | shipped profile |",
             "|---|---|---|---|"]
    for h in held:
        cells = [f"{pct(h[f'{w}_median_abs_time_error'])} / "
                 f"{pct(h[f'{w}_max_abs_time_error'])} ({h[f'{w}_median_time_error']:+.1%})"
                 for w in ("own", "shipped")]
        if not h["calibrated"]:
            cells[0] = "not calibrated"
        lines.append(f"| `{h['campaign']}` | {h['runs']} | {cells[0]} | {cells[1]} |")
    return lines


def not_conserved(s):
    """What a set's byte errors leave out: drained runs whose counters report more bytes back
    than could have left the GPU (fidelity.py's excess_bytes_back), and the medians with them."""
    left = s.get("bytes_not_conserved") or []
    if not left:
        return ""
    runs = ", ".join(f"{r['trace']} {r['policy']} {r['budget']:.0%} (+{r['excess_bytes_back_gb']} GB)"
                     for r in left)
    return (f" {len(left)} more drained runs are left out: their counters report more bytes "
            f"back than had arrived or could have been created on the GPU ({runs}), so they "
            f"lost bytes to the GPU; with them the medians read "
            f"{pct(s['all_drained_median_abs_htod_error'])} HtoD and "
            f"{pct(s['all_drained_median_abs_dtoh_error'])} DtoH.")


def holdout_bytes(label, s):
    """Where a hold-out set's bytes come from: drained runs where a campaign made them, else the
    timed runs' own, which are lower bounds (the cells in parentheses)."""
    if s.get("bytes_campaign"):
        campaigns = s["bytes_campaign"]
        campaigns = campaigns if isinstance(campaigns, list) else [campaigns]
        places = [speeds.instance_of(c) for c in campaigns]
        where = ("instance " if len(places) == 1 else "instances ") + " and ".join(places)
        if speeds.instance_of(s["campaign"]) not in places:
            where += ", not the timed runs' instance"
        names = " and ".join(f"`{c}`" for c in campaigns)
        return [f"Bytes of {label}: from {names} ({s['bytes_runs']} drained runs of them, on "
                f"{where})." + not_conserved(s)]
    return [f"Bytes of {label}: no drained runs of them on this GPU, so only the timed runs' "
            "own, lower bounds (in parentheses)."]


def readme(gpu, shipped, holdout, inst, held, schedule=None, holdout2=None, held2=(),
           holdout3=None, held3=()):
    lines = [f"# Live fidelity on the {gpu.upper()}: results", "",
             "Made by `experiments/live/results.py --write` from the campaigns' reports; each "
             "campaign's runs simulated with the profile of the instance they ran on (calibrated "
             "in the same session by `experiments/campaign.sh live`).", "",
             "| set | campaign | runs | median abs time error | max | median HtoD | median DtoH "
             "| " + " | ".join(f"{p}: median / max (signed median)" for p in POLICIES) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(POLICIES)]
    for label, s in (("shipped traces", shipped), ("hold-out programs, first set", holdout),
                     ("hold-out programs, second set", holdout2),
                     ("hold-out programs, third set", holdout3),
                     ("shipped traces, policy schedule", schedule)):
        if s is None:
            continue
        cells = [f"{pct(w['median_abs_time_error'])} / {pct(w['max_abs_time_error'])} "
                 f"({w['median_time_error']:+.1%})" if w else ""
                 for w in (s["by_policy"].get(p) for p in POLICIES)]
        lines.append(f"| {label} | `{s['campaign']}` | {s['runs']} | "
                     f"{pct(s['median_abs_time_error'])} | {pct(s['max_abs_time_error'])} | "
                     f"{bytes_cell(s, 'htod')} | {bytes_cell(s, 'dtoh')} | "
                     + " | ".join(cells) + " |")
    if shipped.get("bytes_campaign"):
        lines += ["", f"Bytes (HtoD, DtoH) of the shipped traces: from `{shipped['bytes_campaign']}` "
                  f"({shipped['bytes_runs']} runs of some of these traces that drained CUPTI's "
                  "records after every kernel or eviction, on another instance; "
                  "`experiments/live/data/bytes-back/`). Without drains CUPTI loses byte records "
                  "in migration-heavy runs, so a timed campaign's bytes are lower bounds, shown "
                  "in parentheses where no drained runs exist."]
        if shipped.get("undrained_median_abs_htod_error") is not None:
            lines[-1] += (" Against this campaign's own undrained bytes the simulator's median "
                          f"|error| would read {pct(shipped['undrained_median_abs_htod_error'])} "
                          f"HtoD and {pct(shipped['undrained_median_abs_dtoh_error'])} DtoH.")
    for label, s in (("the first hold-out set", holdout), ("the second hold-out set", holdout2),
                     ("the third hold-out set", holdout3)):
        if s:
            lines += ["", *holdout_bytes(label, s)]
    # Named: the second hold-out set's campaigns were calibrated with these benchmarks, so
    # "these campaigns" would be wrong.
    older = [s for s in (shipped, holdout, holdout2) if s and s.get("filled_from_shipped_profile")]
    filled = sorted({k for s in older for k in s["filled_from_shipped_profile"]})
    if filled:
        names = ", ".join(f"`{s['campaign']}`" for s in older)
        lines += ["", f"The calibrations of {names} predate the benchmarks of {', '.join(filled)}"
                  f" ({'; '.join(LATER_KEYS[k] for k in filled)}): their "
                  "runs are simulated with those costs from the shipped profile, the rest from "
                  "their own."]
    if len(held) > 1:
        lines += ["", "## The first hold-out set on each instance", "",
                  "The first set's three programs (hash-join, transpose2d, llama: "
                  "`experiments/live/holdout/`), never used to tune the model (but see its "
                  "README: hash-join and transpose2d showed the host's first-touch cost). "
                  "Median / max |time error| (signed median).", "", *holdout_table(held)]
    if held2:
        # Apart from the first set: these programs were captured after it had shown the host's
        # first-touch cost; radix-sort's kernels then showed the fault order (holdout/README.md).
        lines += ["", "## The second hold-out set", "",
                  "Three more programs (radix-sort, cg, unet: `experiments/live/holdout/`), "
                  "captured after the host's first-touch cost entered the model; radix-sort's and "
                  "cg's per-kernel rows led to the strided fault benchmarks (a calibration "
                  "change, nothing fitted to these runs: see that README). Median / max |time "
                  "error| (signed median).", "",
                  *holdout_table(held2)]
    if held3:
        lines += ["", "## The third hold-out set", "",
                  "Three more programs (bfs, vit, lstm: `experiments/live/holdout/`), captured "
                  "after `read_since_discard` entered the model (found on the shipped resnet50 "
                  "and moe); some instances ran part of the set, and bfs was then replayed per "
                  "kernel to find a cost (holdout/README.md). Median / max |time error| (signed median).",
                  "", *holdout_table(held3)]
    lines += ["", "## Instances", "",
              "Each instance's runs simulated with its per-machine calibration (`faultline "
              "calibrate --from`, under a minute; for campaigns calibrated in full, derived from "
              "those measurements by `calibrate --refit FULL --from`), its full calibration "
              "(about 3 minutes) and the shipped profile (one profile for every instance). "
              "Median / max |time error|; * marks the profile the campaign's report uses.", "",
              "| campaign | runs | per-machine calibration | full calibration | shipped profile "
              "| on its runs that another instance also made: per-machine / full / shipped |",
              "|---|---|---|---|---|---|"]
    for i in inst["instances"]:
        cells = [(f"{pct(i[f'{w}_median_abs_time_error'])} / {pct(i[f'{w}_max_abs_time_error'])}"
                  + (" *" if i["calibration"] == w else ""))
                 if i[f"{w}_median_abs_time_error"] is not None else "not made"
                 for w in ("per_machine", "full", "shipped")]
        common_cells = " / ".join(pct(i[f"{w}_median_abs_time_error_on_common_runs"]) or "-"
                                  for w in ("per_machine", "full", "shipped"))
        lines.append(f"| `{i['campaign']}` | {i['runs']} | " + " | ".join(cells) +
                     f" | {common_cells} |")
    ways = inst["by_calibration"]
    lines += ["", "Over the instances, the median of their medians (the worst instance's): " +
              ", ".join(f"{label} {pct(ways[w]['median_of_medians'])} "
                        f"({pct(ways[w]['max_of_medians'])}, {ways[w]['instances']} instances)"
                        for w, label in (("per_machine", "per-machine calibration"),
                                         ("full", "full calibration"),
                                         ("shipped", "shipped profile"))) + "."]
    if inst.get("median_profile"):
        m = inst["median_profile"]
        lines += ["", f"One profile for an instance nobody calibrated (`configs/gpus/{gpu}-median"
                  f".json`: each per-machine cost the median over {len(m['instances'])} "
                  "instances, `experiments/live/calibration.py median-profile`), each campaign simulated with "
                  "the median of the other instances (its own left out): "
                  + "; ".join(f"{label} ({o['campaigns']}) median of the medians "
                              f"{pct(o['median_of_others']['median_of_medians'])} against "
                              f"{pct(o['shipped']['median_of_medians'])} with the shipped profile "
                              f"and {pct(o['own']['median_of_medians'])} with its own calibration"
                              for label, o in (("every campaign", m["all"]),
                                               ("the hold-out campaigns", m["holdout"])))
                  + f" (`experiments/live/reports/median-profile/{gpu}/`)."]
    if len(inst["instances"]) > 1:
        lines += ["", f"The {len(inst['common_runs'])} runs made on two instances or more: "
                  f"slowest over fastest live time {inst['median_live_ratio']:.2f}x median, "
                  f"{inst['max_live_ratio']:.2f}x max."]
    lines.append("")
    return "\n".join(lines)
