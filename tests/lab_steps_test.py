"""The helpers the study entries share (experiments/lab/): a swept curve read where it crosses a
level and between its points (lab/curves.py: HUVM's report and peer_cost read their sweeps with
them); a study's steps (lab/steps.py): a failing command ends the study with its own exit status,
a quiet one drops its output, and an entry runs its whole study unless its first word names a
subcommand or asks for help; and the papers' claims gathered (lab/papers/claims.py): a paper run
into out/ stands in for its committed claims, the live fragments beside the committed ones are
kept, and a row without a field fails."""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "experiments"))
from lab import curves, steps  # noqa: E402
from lab.papers import claims  # noqa: E402


def test_crossing():
    up = [(0, 1.0), (100, 2.0), (200, 4.0)]
    assert curves.crossing(up, 1.5) == 50
    assert curves.crossing(up, 3.0) == 150
    assert curves.crossing(up, 1.0) == 0  # on a point
    assert curves.crossing(up, 5.0) is None  # never reached
    down = [(0, 3.0), (10, 1.0), (20, 0.5)]
    assert curves.crossing(down, 2.0) == 5  # from above
    flat = [(0, 1.0), (10, 1.0), (20, 3.0)]
    assert curves.crossing(flat, 1.0) == 10  # a flat stretch at the level is passed over
    assert curves.crossing([(0, 1.0)], 1.0) is None  # one point is no line


def test_interpolate():
    pts = [(0, 1.0), (100, 2.0), (400, 5.0)]
    assert curves.interpolate(pts, -5) == 1.0  # held at the ends
    assert curves.interpolate(pts, 1000) == 5.0
    assert curves.interpolate(pts, 50) == 1.5
    assert curves.interpolate(pts, 100) == 2.0
    assert curves.interpolate(pts, 250) == 3.5


def exit_status(call):
    try:
        call()
    except SystemExit as e:
        return e.code
    return None


def test_run():
    assert exit_status(lambda: steps.run(sys.executable, "-c", "pass")) is None
    assert exit_status(lambda: steps.run(sys.executable, "-c", "import sys; sys.exit(3)")) == 3
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.txt")
        code = ("import sys; print('to stdout'); print('to stderr', file=sys.stderr)")
        with open(out, "w") as f:
            subprocess.run([sys.executable, "-c",
                            "import sys; sys.path.insert(0, sys.argv[1]); from lab import steps; "
                            f"steps.run(sys.executable, '-c', {code!r}, quiet=True)",
                            os.path.join(os.path.dirname(__file__), "..", "experiments")],
                           stdout=f, stderr=subprocess.STDOUT, check=True)
        with open(out) as f:
            assert f.read() == "to stderr\n"  # the quiet step's stdout dropped, its stderr kept


def test_main_or_dispatch():
    calls = []

    def default(argv, prog):
        calls.append(("default", argv))
        return 5

    def sub(argv, prog):
        calls.append(("sub", argv, prog.split()[-1]))

    subcommands = {"sub": (sub, "a part")}
    assert steps.main_or_dispatch("doc", subcommands, default, []) == 5
    assert steps.main_or_dispatch("doc", subcommands, default, ["a", "--x"]) == 5
    assert steps.main_or_dispatch("doc", subcommands, default, ["--write-reports"]) == 5
    assert steps.main_or_dispatch("doc", subcommands, default, ["sub", "1"]) == 0
    with contextlib.redirect_stdout(io.StringIO()) as text:
        assert steps.main_or_dispatch("the doc", subcommands, default, ["--help"]) == 0
    assert text.getvalue().startswith("the doc") and "sub  a part" in text.getvalue()
    assert calls == [("default", []), ("default", ["a", "--x"]), ("default", ["--write-reports"]),
                     ("sub", ["1"], "sub")]


def row(paper, value):
    return {"paper": paper, "claim": "c", "paper_value": 1, "our_value": value, "setting": "s",
            "command": "cmd"}


def write(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(rows, f)


def test_gather():
    with tempfile.TemporaryDirectory() as tmp:
        here = os.path.join(tmp, "papers")
        for paper in claims.PAPERS:
            write(os.path.join(here, paper, "claims.json"), [row(paper, "committed")])
        write(os.path.join(here, "huvm", "claims-live.json"), [dict(row("huvm", "live"), extra=1)])
        fresh = os.path.join(tmp, "out", "deepum", "claims.json")
        write(fresh, [row("deepum", "fresh")])
        gathered = os.path.join(tmp, "gathered.json")
        saved = claims.HERE
        claims.HERE = here
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                rows = claims.gather({"deepum": fresh}, gathered)
            with open(gathered) as f:
                assert json.load(f) == rows
            assert [(r["paper"], r["our_value"]) for r in rows] == [
                ("deepum", "fresh"), ("gmlake", "committed"), ("huvm", "committed"),
                ("huvm", "live"), ("pump", "committed"), ("schedule", "committed")]
            assert "extra" not in rows[3]  # only the fields every row has
            write(os.path.join(here, "pump", "claims.json"), [{"paper": "pump"}])
            assert "lacks claim" in str(exit_status(lambda: claims.gather(path=gathered)))
        finally:
            claims.HERE = saved


def main():
    test_crossing()
    test_interpolate()
    test_run()
    test_main_or_dispatch()
    test_gather()
    print("lab steps: ok")


if __name__ == "__main__":
    main()
