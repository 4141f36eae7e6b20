"""Fails when the source folders include each other in a cycle.
    python3 tests/include_cycles.py SOURCE_DIR
A folder is sim/<part>, tracer/<part> or policies (all policy folders together, since they sit on
one layer). An edge A -> B is an #include "B/..." in a file of A. Prints each cycle found with an
include that makes each of its edges, and exits 1; exits 0 when the folders form layers."""
import os
import re
import sys


def folder(path):
    parts = path.split("/")
    return "policies" if parts[0] == "policies" else "/".join(parts[:2])


def edges(root):
    found = {}
    for top in ("sim", "policies", "tracer"):
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cu")):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root)
                text = open(os.path.join(root, path), errors="replace").read()
                for included in re.findall(r'#include "([^"]+)"', text):
                    if "/" not in included or not os.path.exists(os.path.join(root, included)):
                        continue
                    a, b = folder(path), folder(included)
                    if a != b:
                        found.setdefault((a, b), f"{path} includes {included}")
    return found


def cycles(found):
    graph = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def main():
    found = edges(sys.argv[1])
    bad = cycles(found)
    for component in bad:
        print("folders that include each other: " + ", ".join(component))
        for (a, b), example in sorted(found.items()):
            if a in component and b in component:
                print(f"  {a} -> {b}: {example}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
