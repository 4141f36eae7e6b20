"""What moves with the eviction's level: reads the outputs of experiments/live/probes/eviction_level
and prints, per output, its rounds in the low and the high level (a 2 MB eviction's median CPU
time under or over SPLIT_US), every other column's median in each, and each column's correlation
with the eviction's time over the rounds.

    experiments/live/diagnose.py eviction-level PROBE_OUTPUT...

A column that moves with the level names where the level comes from: the pinned copy is the link
and the GPU's copy engines, the arithmetic loop the CPU's own speed, steal the hypervisor taking
the CPUs, the fresh-memory touch and pageable copies the guest's page allocation and faults, an
empty kernel waited for by spinning the CPU-GPU round trip, and by sleeping also the interrupt
that wakes the thread.
"""
import statistics
import sys

SUMMARY = "the eviction_level probe's rounds, split by level"

SPLIT_US = 230  # between the two levels the probes meet (about 180 and 260-290 us)
COLUMNS = {"pinned_us": "copy to pinned", "pinned_far_us": "copy to far pinned",
           "spin_us": "empty kernel, spun for", "sleep_us": "empty kernel, slept for",
           "warm_us": "copy to warm pageable",
           "fresh_us": "copy to fresh pageable", "touch_us_per_2MB": "CPU touch of fresh memory",
           "arith_us": "arithmetic loop", "steal_ms": "steal (ms a round)"}


def read(path):
    """{column: [values]} of the probe's rounds; exits naming the line that does not parse."""
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or not lines[0].startswith("s "):
        raise SystemExit(f"eviction_level: {path}: line 1: expected the probe's header 's ...'")
    header = lines[0].split()
    if "evict_us" not in header:
        raise SystemExit(f"eviction_level: {path}: line 1: no evict_us column")
    columns = {name: [] for name in header}
    for number, line in enumerate(lines[1:], start=2):
        if not line or not line[0].isdigit():
            continue  # the call script's rc= line
        fields = line.split()
        if len(fields) != len(header):
            raise SystemExit(f"eviction_level: {path}: line {number}: {len(fields)} fields, "
                             f"expected {len(header)}")
        for name, value in zip(header, fields):
            try:
                columns[name].append(float(value))
            except ValueError:
                raise SystemExit(f"eviction_level: {path}: line {number}: {name} is {value!r}, "
                                 "expected a number") from None
    if len(columns["evict_us"]) < 2:
        raise SystemExit(f"eviction_level: {path}: {len(columns['evict_us'])} rounds, expected "
                         "2 or more")
    return columns


def median_where(values, high, level):
    """The median of the values of the rounds in `level` (True: high)."""
    return statistics.median(v for v, h in zip(values, high) if h == level)


def summary(path):
    c = read(path)
    evict = c["evict_us"]
    high = [e > SPLIT_US for e in evict]
    lows, highs = high.count(False), high.count(True)
    quantiles = statistics.quantiles(evict, n=10)
    out = {"file": path, "rounds": len(evict), "seconds": c["s"][-1],
           "evict_median": statistics.median(evict), "evict_p10": quantiles[0],
           "evict_p90": quantiles[-1], "high_share": highs / len(evict), "columns": {}}
    for name in COLUMNS:
        if name not in c:
            continue
        values = c[name]
        constant = len(set(values)) == 1
        out["columns"][name] = {
            "low": median_where(values, high, False) if lows else float("nan"),
            "high": median_where(values, high, True) if highs else float("nan"),
            "correlation": 0.0 if constant else statistics.correlation(evict, values)}
    return out


def main(argv=None, prog=None):
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        raise SystemExit(__doc__)
    rows = [summary(p) for p in paths]
    shown = [name for name in COLUMNS if any(name in r["columns"] for r in rows)]
    print(f"| output | rounds (s) | eviction us: median (p10-p90) | share high (> {SPLIT_US} us) | "
          + " | ".join(f"{COLUMNS[name]}: low / high (r)" for name in shown) + " |")
    print("|---" * (4 + len(shown)) + "|")
    for r in rows:
        cells = []
        for name in shown:
            col = r["columns"].get(name)
            cells.append("-" if col is None else
                         f"{col['low']:.1f} / {col['high']:.1f} ({col['correlation']:+.2f})")
        print(f"| `{r['file']}` | {r['rounds']} ({r['seconds']:.0f}) | {r['evict_median']:.0f} "
              f"({r['evict_p10']:.0f}-{r['evict_p90']:.0f}) | {r['high_share']:.0%} | "
              + " | ".join(cells) + " |")
