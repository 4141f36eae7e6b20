"""Compares a sanitize-mode capture (A) with a two-pass CUPTI capture (B) of the same program,
kernel by kernel, and sorts every page on which they differ by its explanation.
    experiments/capture/check.py explain FAULTLINE_BIN SANITIZE_TRACE CUPTI_TRACE > report.json

Pages are named by (PyTorch block ordinal, 64 KB big page in it), or (segment ordinal, page) outside
blocks: two runs of one program can place a block at different offsets of its segment. Kernels are
grouped into Hopper tensor-core kernels (names starting sm90_ or nvjet: their operands come by
tensor-map copies, which the Sanitizer API does not see, so A takes the PyTorch blocks their
arguments name) and the others. Explanations tested:
  - a page only in B inside an aligned window (2 to 32 pages of B's address space) more than half
    of whose pages B holds and A saw the kernel touch: the driver's density prefetcher brought it
    in during B's access pass (B counts every page an operation left on the GPU);
  - a page only in A of a tensor-core kernel, inside a block its arguments name: the argument
    rule took the whole block; split by whether B saw the kernel touch that block at all.
Prints a JSON report: per group, kernels, kernels whose sets agree to 99% (|A and B| / |A or B|)
before and after removing the explained pages, and the page counts of each explanation."""
import argparse
import bisect
import functools
import json
import subprocess
import sys

from lab.capture.access import trace_pair

SUMMARY = "a sanitize capture against a CUPTI capture, each differing page sorted by its cause (JSON)"


def load(faultline, path):
    """Per kernel: (name, {big page}, sorted live segments, sorted live blocks); segments and
    blocks as (address, size, ordinal), blocks numbered in their own allocation order."""
    live, ops, counts = {}, [], {"block": 0, "segment": 0}
    dump = subprocess.Popen([faultline, "trace", "dump", path], stdout=subprocess.PIPE, text=True)
    next(dump.stdout)
    for line in dump.stdout:
        r = json.loads(line)
        if r["type"] == "alloc":
            group = "block" if r["kind"] == "block" else "segment"
            live[r["id"]] = (r["address"], r["size"], r["kind"], counts[group])
            counts[group] += 1
        elif r["type"] == "free":
            live.pop(r["id"], None)
        elif r["type"] == "kernel":
            segments = sorted((a, s, o) for a, s, k, o in live.values() if k != "block")
            blocks = sorted((a, s, o) for a, s, k, o in live.values() if k == "block")
            ops.append((r["name"], {a[0] >> 16 for a in r["accesses"]}, segments, blocks))
    if dump.wait() != 0:
        sys.exit(f"{path}: faultline trace dump failed")
    return ops


def named(segments, blocks, page):
    """A page as (block ordinal, page in it) inside a PyTorch block, else (segment ordinal, page
    in it): two runs of one program place blocks at different offsets of their segments."""
    address = page << 16
    i = bisect.bisect_right(blocks, (address, float("inf"), 0)) - 1
    if i >= 0 and address < blocks[i][0] + blocks[i][1]:
        return ("block", blocks[i][2], (address - blocks[i][0]) >> 16)
    i = bisect.bisect_right(segments, (address, float("inf"), 0)) - 1
    return ("segment", segments[i][2], (address - segments[i][0]) >> 16)


def prefetched(page, pages_b, name_b, touched_a):
    """Whether B's page lies in an aligned window of B's address space more than half of whose
    pages B holds and A saw touched too: the density prefetcher's rule."""
    for width in (2, 4, 8, 16, 32):
        base = page - page % width
        seen = sum(q in pages_b and name_b(q) in touched_a for q in range(base, base + width))
        if 2 * seen > width:
            return True
    return False


def main(argv=None, prog=None):
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    faultline, a_path, b_path = trace_pair(argv, parser, "SANITIZE_TRACE", "CUPTI_TRACE")
    a, b = load(faultline, a_path), load(faultline, b_path)
    if [n for n, *_ in a] != [n for n, *_ in b]:
        sys.exit("the captures ran different operations")
    report = {}
    for (name, pages_a, seg_a, blocks_a), (_, pages_b, seg_b, blocks_b) in zip(a, b):
        tensor = name.startswith("sm90_") or name.startswith("nvjet")
        g = report.setdefault("tensor-core kernels" if tensor else "other kernels", {
            "kernels": 0, "agree_99": 0, "agree_99_after_explained": 0, "pages_union": 0,
            "only_sanitize": 0, "only_cupti": 0, "only_cupti_density_prefetch": 0,
            "only_sanitize_argument_block_untouched_by_cupti": 0,
            "only_sanitize_argument_block_partly_touched": 0, "only_sanitize_unexplained": 0})
        ka = {named(seg_a, blocks_a, p) for p in pages_a}
        kb = {named(seg_b, blocks_b, p) for p in pages_b}
        union = ka | kb
        g["kernels"] += 1
        g["pages_union"] += len(union)
        g["agree_99"] += not union or len(ka & kb) >= 0.99 * len(union)
        explained = set()
        name_b = functools.partial(named, seg_b, blocks_b)
        for page in pages_b:
            p = name_b(page)
            if p in ka:
                continue
            g["only_cupti"] += 1
            if prefetched(page, pages_b, name_b, ka):
                g["only_cupti_density_prefetch"] += 1
                explained.add(p)
        starts = [s for s, _, _ in blocks_a]
        for page in pages_a:
            p = named(seg_a, blocks_a, page)
            if p in kb:
                continue
            g["only_sanitize"] += 1
            i = bisect.bisect_right(starts, page << 16) - 1
            if not tensor or i < 0 or page << 16 >= blocks_a[i][0] + blocks_a[i][1]:
                g["only_sanitize_unexplained"] += 1
                continue
            lo, hi = blocks_a[i][0] >> 16, (blocks_a[i][0] + blocks_a[i][1] - 1) >> 16
            seen = any(named(seg_a, blocks_a, q) in kb for q in range(lo, hi + 1))
            g["only_sanitize_argument_block_partly_touched" if seen else
              "only_sanitize_argument_block_untouched_by_cupti"] += 1
            explained.add(p)
        rest = union - explained
        g["agree_99_after_explained"] += not rest or len(ka & kb) >= 0.99 * len(rest)
    json.dump(report, sys.stdout, indent=1)
    print()
    return 0
