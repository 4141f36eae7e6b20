"""experiments/lab/live/eviction_level.py: rounds split by the eviction's level, each column's median
in either level and its correlation with the eviction; the committed outputs read back into the
table their README shows; a malformed output is refused with its file and line."""
import contextlib
import io
import os
import sys
import tempfile

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(root, "experiments"))
from lab.live import eviction_level  # noqa: E402

HEADER = "s cpu arith_us steal_ms evict_us pinned_us warm_us fresh_us touch_us_per_2MB pgfault"


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def test_split(folder):
    # Four low rounds and two high; the touch moves with the level, the arithmetic does not.
    rounds = [(180, 900), (182, 910), (178, 890), (181, 905), (270, 1100), (280, 1120)]
    lines = [HEADER] + [f"{i * 0.2:.2f} 3 3000.0 0 {e} 45.0 200.0 1400.0 {t} 65536"
                        for i, (e, t) in enumerate(rounds)] + ["rc=0"]
    s = eviction_level.summary(write(folder, "ok.txt", "\n".join(lines) + "\n"))
    assert s["rounds"] == 6 and abs(s["high_share"] - 2 / 6) < 1e-12
    touch = s["columns"]["touch_us_per_2MB"]
    assert touch["low"] == 902.5 and touch["high"] == 1110.0 and touch["correlation"] > 0.99
    assert s["columns"]["arith_us"]["correlation"] == 0.0  # constant: no correlation claimed
    # A first-version output (no cpu, arithmetic or steal columns) reads too.
    old = "s evict_us pinned_us warm_us fresh_us touch_us_per_2MB\n0.2 180 45 200 1400 900\n" \
          "0.4 270 46 210 1600 1100\n"
    s = eviction_level.summary(write(folder, "old.txt", old))
    assert "arith_us" not in s["columns"] and s["columns"]["pinned_us"]["high"] == 46
    # A column no given output has is not shown.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        eviction_level.main([os.path.join(folder, "old.txt")])
    assert "copy to pinned" in out.getvalue() and "far pinned" not in out.getvalue()
    assert "arithmetic" not in out.getvalue()


def test_bad_input(folder):
    for name, text, expected in [
            ("empty.txt", "", "line 1: expected the probe's header"),
            ("short.txt", HEADER + "\n0.2 3 3000 0 180\n", "line 2: 5 fields, expected 10"),
            ("none.txt", HEADER + "\nrc=1\n", "0 rounds, expected 2 or more"),
            ("one.txt", HEADER + "\n" + " ".join(["1"] * 10) + "\n", "1 rounds, expected 2"),
            ("word.txt", HEADER + "\n" + " ".join(["1"] * 9) + " x\n",
             "line 2: pgfault is 'x', expected a number"),
            ("other.txt", "s a b\n1 2 3\n", "line 1: no evict_us column")]:
        try:
            eviction_level.summary(write(folder, name, text))
        except SystemExit as e:
            assert expected in str(e) and name in str(e), e
        else:
            raise AssertionError(f"{name} was read")


def test_committed():
    """The README's table is what the script makes of the committed outputs."""
    data = os.path.join(root, "experiments", "live", "data", "h200-eviction-level")
    tables = [["a/level1.txt", "b/b1-unpinned.txt", "b/b2-cpu3.txt", "b/b3-cpu11.txt",
               "b/b4-unpinned.txt", "c/c1.txt"],
              ["d/d0-alone.txt", "d/d1-copy8.txt", "d/d2-alone.txt", "d/d3-faults4.txt",
               "d/d4-alone.txt"],
              ["e/e1-far32.txt"],  # with the far pinned copies: a column the others lack
              ["f/f1-wake.txt"]]  # with the empty kernel's waits
    cwd = os.getcwd()
    os.chdir(data)
    out = io.StringIO()
    try:
        for files in tables:
            with contextlib.redirect_stdout(out):
                eviction_level.main(files)
    finally:
        os.chdir(cwd)
    with open(os.path.join(data, "README.md")) as f:
        readme = f.read()
    for line in out.getvalue().splitlines():
        assert line in readme, f"README.md lacks: {line}"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        test_split(d)
        test_bad_input(d)
    test_committed()
    print("eviction level: ok")
