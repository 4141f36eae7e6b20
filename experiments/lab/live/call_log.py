"""What a replay's migration calls cost, from its call log (`faultline replay --call-log FILE`):

    experiments/live/diagnose.py call-log LOG.csv [LOG.csv...] [--timeline SIM.json]

Per kind of call (m: to the GPU, h: to the GPU of pages held, e: to the host, p: to the
neighbour, d: discard) the count, bytes, CPU time and the share that returned within 10 us: the
driver queues calls, and a later call blocks for the work before it, so a call's CPU time is
what it waited, not what it cost. What a swap costs (an eviction, then a prefetch of host data,
as pump makes room) is read from the calls' starts instead: from one eviction to the next within
a kernel, over the kernel's swaps after the queue has filled (both calls blocking). With
--timeline (`faultline sim --timeline` of the same run in capacity mode "budget", whose budget
evictions come in the replay's order), each budget eviction against the simulator's, from its
start to the next eviction's start, by how much of the chunk it held.
"""
import argparse
import csv
import json
import statistics
import sys

SUMMARY = (
    "a replay's call log: per kind of call, the queue, the swaps, each eviction against the "
    "simulator's")

KINDS = {"m": "to the GPU", "h": "to the GPU, pages held", "e": "to the host",
         "p": "to the neighbour", "d": "discard"}
QUEUED_NS = 10_000
BLOCK = 2 << 20
HEADER = ["kernel", "kind", "address", "bytes", "start_ns", "cpu_ns"]


def read(path):
    """The log's rows as dicts with integer fields; a malformed row raises ValueError naming the
    file and line."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != HEADER:
            raise ValueError(f"{path}: line 1: expected the header {','.join(HEADER)}")
        rows = []
        for line, r in enumerate(reader, start=2):
            try:
                row = {k: int(r[k]) for k in HEADER if k != "kind"}
            except (TypeError, ValueError):
                raise ValueError(f"{path}: line {line}: expected integers besides the kind") from None
            if r["kind"] not in KINDS:
                raise ValueError(f"{path}: line {line}: kind {r['kind']!r}: expected one of "
                                 + ", ".join(KINDS))
            rows.append({**row, "kind": r["kind"]})
    return rows


def by_kind(rows):
    out = {}
    for kind in KINDS:
        cpu = [r["cpu_ns"] for r in rows if r["kind"] == kind]
        if cpu:
            out[kind] = {"calls": len(cpu), "bytes": sum(r["bytes"] for r in rows
                                                          if r["kind"] == kind),
                         "cpu_s": sum(cpu) / 1e9, "median_cpu_us": statistics.median(cpu) / 1e3,
                         "queued_share": sum(c < QUEUED_NS for c in cpu) / len(cpu)}
    return out


def swap_costs(rows):
    """ns from one eviction's start to the next's within a kernel, where the eviction follows a
    prefetch of host data and both calls blocked (the queue full): a swap's cost."""
    out = []
    for i in range(1, len(rows) - 2):
        prev, e, m, nxt = rows[i - 1], rows[i], rows[i + 1], rows[i + 2]
        if (prev["kind"] == "m" and e["kind"] == "e" and m["kind"] == "m" and nxt["kind"] == "e"
                and prev["kernel"] == e["kernel"] == nxt["kernel"]
                and min(e["cpu_ns"], m["cpu_ns"]) >= QUEUED_NS):
            out.append(nxt["start_ns"] - e["start_ns"])
    return out


def evictions(rows):
    """The log's budget evictions, one per chunk: consecutive e calls of one chunk in one kernel
    (one call per run of pages) joined, with their bytes and the next eviction's start in the
    same kernel (None for a kernel's last)."""
    chunks = []
    for r in rows:
        if r["kind"] != "e":
            chunks.append(None)
            continue
        last = chunks[-1] if chunks else None
        if last and last["chunk"] == r["address"] // BLOCK and last["kernel"] == r["kernel"]:
            last["bytes"] += r["bytes"]
            continue
        chunks.append({"chunk": r["address"] // BLOCK, "kernel": r["kernel"],
                       "bytes": r["bytes"], "start": r["start_ns"]})
    out = []
    for i, c in enumerate(chunks):
        if c is None:
            continue
        nxt = chunks[i + 1] if i + 1 < len(chunks) else None
        gap = nxt["start"] - c["start"] if nxt and nxt["kernel"] == c["kernel"] else None
        out.append({"bytes": c["bytes"], "gap": gap})
    return out


def simulated_evictions(path):
    """The simulator's budget evictions in order: bytes, and the gap to the next one (None where
    the next comes more than 2 ms later: another kernel's)."""
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    ev = sorted((e["ts"] * 1e3, e["args"]["bytes"]) for e in events
                if e.get("ph") == "X" and e.get("name") == "budget eviction")
    return [{"bytes": b, "gap": ev[i + 1][0] - t if i + 1 < len(ev) and ev[i + 1][0] - t < 2e6
             else None} for i, (t, b) in enumerate(ev)]


def matched(live, sim):
    """Per size class (pages of 64 KB the eviction moved), live and simulated gaps of the
    evictions both sides time, matched in order."""
    classes = {}
    for a, b in zip(live, sim):
        if a["gap"] is None or b["gap"] is None:
            continue
        pages = a["bytes"] // 65536
        label = "32 pages" if pages >= 32 else "17-31" if pages > 16 else "5-16" if pages > 4 else "1-4"
        classes.setdefault(label, ([], []))
        classes[label][0].append(a["gap"])
        classes[label][1].append(b["gap"])
    return classes


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--timeline", help="the simulator's timeline of the same run (one log only)")
    args = ap.parse_args(argv)
    if args.timeline and len(args.logs) != 1:
        sys.exit("call_log: --timeline goes with one log")
    for path in args.logs:
        try:
            rows = read(path)
        except (OSError, ValueError) as e:
            sys.exit(f"call_log: {e}")
        print(f"{path}: {len(rows)} calls")
        for kind, k in by_kind(rows).items():
            print(f"  {kind} ({KINDS[kind]}): {k['calls']} calls, {k['bytes'] / 1e9:.2f} GB, "
                  f"{k['cpu_s']:.3f} s of CPU, median {k['median_cpu_us']:.1f} us, "
                  f"{k['queued_share']:.0%} returned within {QUEUED_NS // 1000} us")
        swaps = swap_costs(rows)
        if swaps:
            q = statistics.quantiles(swaps, n=10) if len(swaps) > 1 else [swaps[0]] * 9
            print(f"  swaps with the queue full: {len(swaps)}, median "
                  f"{statistics.median(swaps) / 1e3:.0f} us (10th-90th percentile "
                  f"{q[0] / 1e3:.0f}-{q[-1] / 1e3:.0f})")
        if args.timeline:
            live = evictions(rows)
            sim = simulated_evictions(args.timeline)
            same = sum(a["bytes"] == b["bytes"] for a, b in zip(live, sim))
            print(f"  budget evictions: {len(live)} live, {len(sim)} simulated, "
                  f"{same} of the first {min(len(live), len(sim))} the same size in order")
            for label, (a, b) in sorted(matched(live, sim).items()):
                print(f"    {label}: {len(a)}, to the next eviction live median "
                      f"{statistics.median(a) / 1e3:.0f} us (mean {statistics.mean(a) / 1e3:.0f}), "
                      f"simulated {statistics.median(b) / 1e3:.0f} us (mean "
                      f"{statistics.mean(b) / 1e3:.0f})")
