"""Where do an access-mode raw stream's DtoH records fall relative to its eviction windows?
    python3 evict_windows.py ACCESS_RAW
Prints how many unified-memory records of each kind arrived, how many DtoH records fall inside
an eviction window, how many fall between windows (with their distance to the nearest window
and their migration cause), and the after-operation windows that received no record."""
import bisect
import collections
import sys

from raw_dump import dec, read


def main():
    records = read(sys.argv[1])
    windows, um = [], []
    for kind, payload in records:
        if kind == "evict":
            windows.append(dec(kind, payload))
        elif kind == "um":
            um.append(dec(kind, payload))
    print("records by counter:", dict(collections.Counter(u["c"] for u in um)))
    print("drains:", [dec(k, p) for k, p in records if k == "meta" and b"access_" in p])
    print("dropped:", [dec(k, p) for k, p in records if k == "dropped"][:5])
    begins = [w["b"] for w in windows]
    inside = [0] * len(windows)
    outside = []
    for u in (u for u in um if u["c"] == 2):
        i = bisect.bisect_right(begins, u["s"]) - 1
        if i >= 0 and u["s"] <= windows[i]["e"]:
            inside[i] += 1
            continue
        after = windows[i]["e"] if i >= 0 else None
        before = windows[i + 1]["b"] if i + 1 < len(windows) else None
        gap = min(abs(u["s"] - t) for t in (after, before) if t is not None)
        outside.append((gap, u["fl"], u["v"]))
    print(f"{len(windows)} windows; DtoH inside: {sum(inside)}, outside: {len(outside)}")
    if outside:
        gaps = sorted(g for g, _, _ in outside)
        print("  outside: distance to nearest window (us) median",
              gaps[len(gaps) // 2] / 1e3, "max", gaps[-1] / 1e3,
              "causes", dict(collections.Counter(c for _, c, _ in outside)),
              "bytes", sum(v for _, _, v in outside))
    empty = [i for i, w in enumerate(windows) if w["purpose"] == 1 and inside[i] == 0]
    print(f"after-operation windows without DtoH: {len(empty)} of "
          f"{sum(w['purpose'] == 1 for w in windows)}; first: {empty[:20]}")


if __name__ == "__main__":
    main()
