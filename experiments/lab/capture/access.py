"""Compares the access sets of two traces of the same program, operation by operation.
    experiments/capture/check.py access FAULTLINE_BIN TRACE_A TRACE_B
Pages are named by (allocation ordinal, 64 KB big page offset), so two runs whose allocations landed
at different addresses compare equal when they touched the same data. Prints a summary line and
the first differing operations; exits 1 when any operation differs."""
import argparse
import bisect
import json
import subprocess
import sys

SUMMARY = "two captures of one program compared page by page, operation by operation"


def access_sets(faultline, path):
    """[(kernel name, {(segment ordinal, page)})] in trace order; segments are the managed and
    device allocations (not PyTorch's blocks inside them), numbered in order of allocation."""
    live = {}  # id -> (address, size, ordinal)
    ordinals = 0
    index = None  # sorted [(address, size, ordinal)] of live segments, rebuilt after a change
    ops = []
    dump = subprocess.Popen([faultline, "trace", "dump", path], stdout=subprocess.PIPE, text=True)
    next(dump.stdout)  # header
    for line in dump.stdout:
        r = json.loads(line)
        if r["type"] == "alloc" and r["kind"] != "block":
            live[r["id"]] = (r["address"], r["size"], ordinals)
            ordinals += 1
            index = None
        elif r["type"] == "free" and r["id"] in live:
            del live[r["id"]]
            index = None
        elif r["type"] == "kernel":
            if index is None:
                index = sorted(live.values())
                starts = [a for a, _, _ in index]
            pages = set()
            for address, _offset, _type in r["accesses"]:
                i = bisect.bisect_right(starts, address) - 1
                if i < 0 or address >= index[i][0] + index[i][1]:
                    sys.exit(f"{path}: kernel {len(ops)} touches {address:#x} outside allocations")
                pages.add((index[i][2], (address - index[i][0]) >> 16))
            ops.append((r["name"], pages))
    if dump.wait() != 0:
        sys.exit(f"{path}: faultline trace dump failed")
    return ops


def trace_pair(argv, parser, a="TRACE_A", b="TRACE_B"):
    """The arguments FAULTLINE_BIN A B of a comparison of two traces, parsed by PARSER."""
    for name in ("FAULTLINE_BIN", a, b):
        parser.add_argument(name.lower(), metavar=name)
    args = vars(parser.parse_args(argv))
    return args["faultline_bin"], args[a.lower()], args[b.lower()]


def main(argv=None, prog=None):
    faultline, a_path, b_path = trace_pair(
        argv, argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0]))
    a, b = access_sets(faultline, a_path), access_sets(faultline, b_path)
    if len(a) != len(b):
        sys.exit(f"{len(a)} operations in {a_path}, {len(b)} in {b_path}")
    differing = missing = extra = 0
    for i, ((name_a, pa), (name_b, pb)) in enumerate(zip(a, b)):
        if name_a != name_b:
            sys.exit(f"operation #{i}: {name_a[:60]} against {name_b[:60]}")
        if pa == pb:
            continue
        differing += 1
        missing += len(pa - pb)
        extra += len(pb - pa)
        if differing <= 10:
            print(f"#{i} {name_a[:60]}: {len(pa)} pages against {len(pb)}, "
                  f"{len(pa - pb)} only in A, {len(pb - pa)} only in B")
    total = sum(len(p) for _, p in a)
    print(f"{len(a)} operations, {total} pages in A; {differing} operations differ, "
          f"{missing} pages only in A, {extra} only in B")
    return 1 if differing else 0
