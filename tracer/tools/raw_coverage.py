"""Per operation of a raw access-mode stream: the 64 KB big pages its HtoD migrations cover, by
cause, against the expectation um_micro wrote. A debugging aid for the injection library.
    python3 raw_coverage.py RAW [EXPECT_JSON]"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from raw_dump import dec, read  # noqa: E402

recs = read(sys.argv[1])
allocs = [dec(t, p) for t, p in recs if t == "alloc"]
windows = sorted([dec(t, p) for t, p in recs if t in ("kact", "cact")], key=lambda w: w["s"])
ums = [dec(t, p) for t, p in recs if t == "um"]
evicts = [dec(t, p) for t, p in recs if t == "evict" and dec(t, p)["purpose"] == 1]
print("records", collections.Counter(t for t, _ in recs))
print("um by (counter, flags)", collections.Counter((u["c"], u["fl"]) for u in ums))
expect = json.load(open(sys.argv[2]))["operations"] if len(sys.argv) > 2 else None
for i, w in enumerate(windows):
    inside = [u for u in ums if w["s"] <= u["s"] <= w["e"]]
    pages = collections.defaultdict(set)
    for u in inside:
        if u["c"] == 1:
            a = int(u["a"], 16)
            for p in range(a // 65536, (a + u["v"] - 1) // 65536 + 1):
                pages[u["fl"]].add(p)
    union = pages[2] | pages[3]
    resident = set()
    if i < len(evicts):
        for u in ums:
            if u["c"] == 2 and evicts[i]["b"] <= u["s"] <= evicts[i]["e"]:
                a = int(u["a"], 16)
                resident.update(range(a // 65536, (a + u["v"] - 1) // 65536 + 1))
    by_alloc = collections.Counter()
    for p in union:
        for j, al in enumerate(allocs):
            if int(al["a"], 16) <= p * 65536 < int(al["a"], 16) + al["b"]:
                by_alloc[j] += 1
    want = sum((q[2] - q[1]) // q[3] + 1 for q in expect[i]["pages"]) if expect and i < len(expect) else "?"
    print(i, "us", (w["e"] - w["s"]) // 1000, "coherence", len(pages[2]), "prefetch-only",
          len(pages[3] - pages[2]), "union by alloc", dict(by_alloc), "evicted", len(resident),
          "htod-seen of evicted", len(union & resident), "expected", want)
