"""Fails when a file includes a header of a layer its own layer may not use.
    python3 tests/layers.py SOURCE_DIR
The layers, the paths each holds and the layers each uses are the table in cmake/layers.txt, which
the CMake build also reads to link each layer's library (cmake/layers.cmake). A file of layer A
may include headers of A, of the layers A uses and of the layers below those (what A's library
gets through its PUBLIC links), never others. Also fails on a source file under sim/, policies/ or
tracer/ that no layer holds, and on a table whose layers use each other in a cycle or use a layer
it does not list. Prints each offending include and exits 1; exits 0 when all keep to the table."""
import fnmatch
import os
import re
import sys

TOPS = ("sim", "policies", "tracer")
SOURCES = (".h", ".cc", ".cu")


def read_table(root):
    """[(layer, paths, uses)] in the table's order; problems found in the table itself."""
    rows, problems, seen = [], [], set()
    with open(os.path.join(root, "cmake", "layers.txt")) as table:
        for number, line in enumerate(table, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            match = re.fullmatch(r"([a-z_]+)\s+([^:]+):(.*)", line)
            if not match:
                problems.append(f"cmake/layers.txt:{number}: cannot read the line")
                continue
            name, paths, uses = match[1], match[2].split(), match[3].split()
            for use in uses:
                if use not in seen:  # also rules out cycles: each uses only layers above it
                    problems.append(f"cmake/layers.txt:{number}: layer {name} uses {use}, "
                                    "which is not a layer listed above it")
            seen.add(name)
            rows.append((name, paths, uses))
    return rows, problems


def layer_of(rel, rows):
    """The layer whose longest path matches rel (as cmake/layers.cmake decides), or None."""
    best, best_length = None, -1
    for name, paths, _ in rows:
        for path in paths:
            hit = (fnmatch.fnmatchcase(rel, path) and rel.count("/") == path.count("/")) \
                if "*" in path else (rel == path or rel.startswith(path + "/"))
            if hit and len(path) > best_length:
                best, best_length = name, len(path)
    return best


def closures(rows):
    """For each layer, the layers it may include: itself and all it uses, directly or not."""
    uses = {name: set(u) for name, _, u in rows}
    reach = {}
    for name, _, _ in rows:  # table order: every used layer is done first
        reach[name] = {name}.union(*(reach.get(u, {u}) for u in uses[name]))
    return reach


def main():
    root = sys.argv[1]
    rows, problems = read_table(root)
    reach = closures(rows)
    for top in TOPS:
        for directory, _, files in sorted(os.walk(os.path.join(root, top))):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                rel = os.path.relpath(os.path.join(directory, name), root)
                layer = layer_of(rel, rows)
                if layer is None:
                    problems.append(f"{rel}: in no layer of cmake/layers.txt")
                    continue
                text = open(os.path.join(root, rel), errors="replace").read()
                for included in re.findall(r'#include "([^"]+)"', text):
                    if "/" not in included or not os.path.exists(os.path.join(root, included)):
                        continue  # same-folder or generated headers
                    other = layer_of(included, rows)
                    if other is not None and other not in reach[layer]:
                        problems.append(f"{rel} (layer {layer}) includes {included} "
                                        f"(layer {other}), which {layer} may not use")
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
