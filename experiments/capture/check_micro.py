"""Checks a microbenchmark trace against the access sets um_micro says it must have.
    python3 check_micro.py FALTLINE_BIN TRACE EXPECT_JSON
Prints per operation the expected and recorded page counts and exits 1 on any difference."""
import json
import subprocess
import sys

faultline, trace_path, expect_path = sys.argv[1:4]
expect = json.load(open(expect_path))
lines = subprocess.run([faultline, "trace", "dump", trace_path], check=True, capture_output=True,
                       text=True).stdout.splitlines()
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
    sys.exit(1)
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
          f"missing {len(expected - got):6d} extra {len(got - expected):6d} {'ok' if same else 'DIFFERENT'}")
sys.exit(1 if bad else 0)
