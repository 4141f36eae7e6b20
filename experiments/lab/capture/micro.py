"""Checks a microbenchmark trace against the access sets um_micro says it must have.
    experiments/capture/check.py micro FAULTLINE_BIN TRACE EXPECT_JSON
Prints per operation the expected and recorded page counts and exits 1 on any difference."""
import argparse
import json
import subprocess

SUMMARY = "a microbenchmark trace against the access sets um_micro declared"


def main(argv=None, prog=None):
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    ap.add_argument("faultline", metavar="FAULTLINE_BIN")
    ap.add_argument("trace", metavar="TRACE")
    ap.add_argument("expect", metavar="EXPECT_JSON", help="what um_micro --expect wrote")
    args = ap.parse_args(argv)
    expect = json.load(open(args.expect))
    lines = subprocess.run([args.faultline, "trace", "dump", args.trace], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    allocs, ops = [], []
    for line in lines[1:]:
        r = json.loads(line)
        if r["type"] == "alloc" and r["kind"] == "managed":
            allocs.append(r)
        elif r["type"] == "kernel":
            ops.append(r)
    bad = 0
    if len(ops) != len(expect["operations"]):
        print(f"{len(ops)} operations recorded, {len(expect['operations'])} expected")
        return 1
    for i, (op, want) in enumerate(zip(ops, expect["operations"])):
        expected = set()
        for alloc, first, last, step in want["pages"]:
            expected |= {(alloc, p) for p in range(first, last + 1, step)}
        got = set()
        for address, _offset, _type in op["accesses"]:
            for j, a in enumerate(allocs):
                if a["address"] <= address < a["address"] + a["size"]:
                    got.add((j, (address - a["address"]) // 65536))
        name = want["name"]
        same = got == expected and (op["name"] == name or f"{name}(" in op["name"])
        bad += not same
        print(f"{i:3d} {op['name'][:40]:40s} expected {len(expected):7d} recorded {len(got):7d} "
              f"missing {len(expected - got):6d} extra {len(got - expected):6d} "
              f"{'ok' if same else 'DIFFERENT'}")
    return 1 if bad else 0
