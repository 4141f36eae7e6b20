"""Whether each policy ranking of a set's headline campaign is consistent with the GPU's spread
(issue 21, item 8), the spread measured across the instances that ran the set.

A (trace, budget) group's ranking is the same where the simulator orders every pair of policies
as this instance's GPU did. A pair it orders differently (or ties, fidelity.SIM_TIE, where the
GPU did not) is within the GPU's spread where the GPU does not separate the two: where the
campaign's repeats of the two overlap (fidelity.py's test), or where another instance's GPU
ordered the same pair at the same trace and budget the other way, so that the GPUs order it
both ways and the simulator's order (or tie) is one of them. A campaign of one run each and one
instance cannot tell; another instance can. results.py writes each set's counts into its
summary (rankings_within_gpu_spread) and the pairs into the results README.
"""
import itertools

from lab.live.fidelity import ordered_differently, repeats_overlap

TIMES = ("live_s", "sim_s", "live_min_s", "live_max_s")


def _runs(rows):
    """(trace, budget, policy) -> the run's times and repeats as numbers (fidelity.csv holds
    strings); untimed (drained) runs left out."""
    return {(r["trace"], float(r["budget"]), r["policy"]):
            {**{k: float(r[k]) for k in TIMES}, "live_repeats": int(r["live_repeats"])}
            for r in rows if r.get("live_s") not in (None, "") and r.get("sim_s") not in (None, "")}


def rank_spread(rows, others):
    """ROWS: the headline campaign's fidelity.csv rows; OTHERS: {campaign: rows} of the other
    instances that ran the set. Per (trace, budget) group with two policies or more: whether
    the simulator's order is the GPU's (same) and, pair by pair where not, how many other
    instances ordered the pair as this one's GPU (agree) and the other way (against), and
    whether the pair is within the GPU's spread."""
    mine = _runs(rows)
    theirs = {name: _runs(r) for name, r in others.items()}
    groups = {}
    for (trace, budget, policy) in mine:
        groups.setdefault((trace, budget), []).append(policy)
    out = []
    for (trace, budget), policies in sorted(groups.items()):
        if len(policies) < 2:
            continue
        pairs = []
        for p, q in itertools.combinations(sorted(policies), 2):
            a, b = mine[(trace, budget, p)], mine[(trace, budget, q)]
            differs, tie = ordered_differently(a, b)
            if not differs:
                continue
            agree = against = 0
            for runs in theirs.values():
                x, y = runs.get((trace, budget, p)), runs.get((trace, budget, q))
                if x is None or y is None:
                    continue
                if (x["live_s"] < y["live_s"]) == (a["live_s"] < b["live_s"]):
                    agree += 1
                else:
                    against += 1
            overlap = repeats_overlap(a, b)
            gap = abs(a["live_s"] - b["live_s"]) / min(a["live_s"], b["live_s"])
            pairs.append({"pair": [p, q], "live_gap": gap,
                          "sim_tie": tie, "repeats_overlap": overlap,
                          "instances_agree": agree, "instances_against": against,
                          "within_gpu_spread": bool(overlap) or against > 0})
        out.append({"trace": trace, "budget": budget, "same": not pairs, "pairs": pairs,
                    "within_gpu_spread": all(s["within_gpu_spread"] for s in pairs)})
    return out


def counts(groups):
    """The summary keys: groups, groups ranked the same, groups within the GPU's spread."""
    return {"rankings": len(groups), "rankings_same": sum(g["same"] for g in groups),
            "rankings_within_gpu_spread": sum(g["within_gpu_spread"] for g in groups)}


def pair_text(g, s):
    """One pair ordered differently, in words: 'bfs 75% ondemand / deepum: 2% apart on this
    instance's GPU; 5 other instances order it so, 2 the other way: within the GPU's spread'."""
    how = "tied in the simulator" if s["sim_tie"] else "ordered the other way in the simulator"
    seen = s["instances_agree"] + s["instances_against"]
    elsewhere = (f"{s['instances_agree']} of {seen} other instances order it as this one, "
                 f"{s['instances_against']} the other way" if seen else "no other instance ran both")
    if s["repeats_overlap"]:
        elsewhere = "its repeats overlap; " + elsewhere
    verdict = "within the GPU's spread" if s["within_gpu_spread"] else "beyond the GPU's spread"
    return (f"{g['trace']} {g['budget']:.0%} {' / '.join(s['pair'])}: {s['live_gap']:.1%} apart "
            f"on this instance's GPU, {how}; {elsewhere}: {verdict}")


def readme_lines(label, campaign, groups):
    """The results README's lines for one set."""
    c = counts(groups)
    lines = [f"- {label} (`{campaign}`): the same order in {c['rankings_same']} of "
             f"{c['rankings']} (trace, budget) groups, within the GPU's spread in "
             f"{c['rankings_within_gpu_spread']}."]
    lines += [f"  - {pair_text(g, s)}" for g in groups for s in g["pairs"]]
    return lines


def readme_section(ranked):
    """The results README's section: RANKED is {set label: (campaign, rank_spread's groups)}."""
    lines = ["", "## Policy rankings", "",
             "Made by `experiments/live/results.py` (`lab/live/rank_spread.py`): in each set's headline campaign, the "
             "(trace, budget) groups whose policies the simulator orders as the GPU did, and each "
             "pair it orders otherwise (or ties), with how the other instances that ran the set "
             "ordered the same pair: a pair the GPUs order both ways (or whose repeats overlap) "
             "is within the GPU's spread.", ""]
    for label, (campaign, groups) in ranked.items():
        lines += readme_lines(label, campaign, groups)
    return lines + [""]
