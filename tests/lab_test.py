"""experiments/lab, the package the studies share: the entries' dispatcher, the trace a live run
replayed, reading a campaign, the tables; and experiments/ keeps few entry scripts, each with
--help."""
import contextlib
import gzip
import io
import json
import os
import subprocess
import sys
import tempfile

root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(root, "experiments"))
from lab import campaigns, cli, sim, tables  # noqa: E402
from lab.live import program  # noqa: E402

MAX_ENTRIES = 15


def test_dispatch():
    seen = []

    def sub(argv, prog):
        seen.append((argv, prog))
        return 3 if argv == ["fail"] else None

    subs = {"go": (sub, "goes")}
    sys.argv[0] = "entry"
    assert cli.dispatch("Doc.", subs, ["go", "a", "--b"]) == 0
    assert seen == [(["a", "--b"], "entry go")]
    assert cli.dispatch("Doc.", subs, ["go", "fail"]) == 3
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert cli.dispatch("Doc.", subs, ["gone"]) == 2
    assert "unknown subcommand 'gone'" in err.getvalue() and "go" in err.getvalue()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.dispatch("Doc.", subs, ["--help"]) == 0
        assert cli.dispatch("Doc.", subs, []) == 2  # no subcommand: the usage, and a failure
    assert out.getvalue().startswith("Doc.") and "  go  goes" in out.getvalue()


def git(*args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_replayed_trace():
    """A run is simulated on the trace as its campaign replayed it: at the campaign's
    traces_revision, else at the run's own revision where the trace has changed since."""
    path = "traces/real/stream.fltrace"
    commits = git("log", "--format=%H", "--", path).split()
    now = git("hash-object", os.path.join(root, path))
    older = next((c for c in commits[1:] if git("rev-parse", f"{c}:{path}") != now), None)
    # the manifest's traces_revision wins over the run's
    assert sim.replayed_trace(path, "unknown", commits[0]) == os.path.join(
        root, "out", "traces", commits[0], path)
    # never committed (a campaign's own capture): as it is
    own = "experiments/live/data/none/own.fltrace"
    assert sim.replayed_trace(own, commits[0]) == os.path.join(root, own)
    # unchanged since the run's revision: the file as it is
    current = sim.trace_at(path)
    assert sim.replayed_trace(path, commits[0]) == current
    assert sim.replayed_trace(path, commits[0] + "-dirty") == current
    assert sim.replayed_trace(path, None) == current
    assert sim.replayed_trace(path, "unknown") == current
    if not older and git("rev-parse", "--is-shallow-repository") == "true":
        print(f"lab: a shallow clone holds no earlier {path}: the recaptured case is not checked")
        return
    assert older, f"{path} has no earlier version in this checkout's history"
    # recaptured since: the older file, extracted, byte for byte as committed then
    got = sim.replayed_trace(path, older + "-dirty")
    assert got == os.path.join(root, "out", "traces", older, path), got
    assert sim.extracted_at(got) == older and sim.extracted_at(current) is None
    with open(got, "rb") as f:
        assert subprocess.run(["git", "-C", root, "hash-object", "--stdin"], input=f.read(),
                              capture_output=True, check=True).stdout.decode().strip() \
            == git("rev-parse", f"{older}:{path}")


def test_campaign():
    with tempfile.TemporaryDirectory() as d:
        def result(name, policy, budget, total):
            doc = {"trace": {"path": "traces/real/stream.fltrace"},
                   "config": {"policy": {"name": policy}, "iterations": 3,
                              "budget": {"mode": "budget", "fraction_of_footprint": budget}},
                   "faultline": {"git_revision": "abc"}, "results": {"total_time_ns": total}}
            with open(os.path.join(d, name), "w") as f:
                json.dump(doc, f)
        result("stream-pump-0.5.json", "pump", 0.5, 30)
        result("stream-pump-0.5.r2.json", "pump", 0.5, 10)
        result("stream-pump-0.5.r3.json", "pump", 0.5, 20)
        result("stream-pump-0.5.r4.json", "pump", 0.5, 40)
        result("stream-ondemand-1.json", "ondemand", 1.0, 5)
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump({"refusals": [{"trace": "stream", "message": "too big"}]}, f)
        # The policy params the campaign's binary defaulted to: no run, and what the program
        # report simulates with; anything but {POLICY: {PARAM: VALUE}} is refused, naming the file.
        with open(os.path.join(d, "policy_params.json"), "w") as f:
            json.dump({"schedule": {"lookahead_kernels": 256}}, f)
        assert program.campaign_params(d) == {"schedule": {"lookahead_kernels": 256}}
        h100 = os.path.join(root, "configs", "gpus", "h100.json")
        config = program.run_config("schedule", "0.5", h100, 0,
                                    program.campaign_params(d)["schedule"])
        assert config["policy"] == {"name": "schedule", "params": {"lookahead_kernels": 256}}
        assert program.run_config("pump", "0.5", h100)["policy"] == {
            "name": "pump"}
        runs = campaigns.load_runs(d)
        assert len(runs) == 5  # neither the manifest nor the policy params is a run
        with open(os.path.join(d, "policy_params.json"), "w") as f:
            json.dump({"schedule": 64}, f)
        try:
            program.campaign_params(d)
            raise AssertionError("malformed policy params were read")
        except ValueError as e:
            assert "policy_params.json: expected" in str(e), e
        os.remove(os.path.join(d, "policy_params.json"))
        assert program.campaign_params(d) == {}
        assert {(r["trace"], r["policy"], r["budget"], r["iterations"], r["revision"])
                for r in runs} == {("stream", "pump", 0.5, 3, "abc"),
                                   ("stream", "ondemand", 1.0, 3, "abc")}
        assert sorted(r["repeat"] for r in runs if r["policy"] == "pump") == [1, 2, 3, 4]
        medians = {r["policy"]: r for r in campaigns.median_of_repeats(runs)}
        # an even count takes the lower middle, and keeps every repeat beside it
        assert medians["pump"]["results"]["total_time_ns"] == 20
        assert medians["pump"]["repeats_s"] == [1e-8, 2e-8, 3e-8, 4e-8]
        assert medians["pump"]["by_repeat"] == {1: 30, 2: 10, 3: 20, 4: 40}
        assert campaigns.refusals(d) == [{"trace": "stream", "message": "too big"}]
        assert campaigns.load_manifest(os.path.join(d, "none")) == {}
        # A large record committed gzip-compressed reads as the plain one.
        with gzip.open(os.path.join(d, "big.kernels.json.gz"), "wt") as f:
            json.dump({"kernels": [1, 2]}, f)
        assert campaigns.read_json(os.path.join(d, "big.kernels.json.gz"), "who") == {
            "kernels": [1, 2]}
        with open(os.path.join(d, "bad.json"), "w") as f:
            f.write("{")
        try:
            campaigns.read_json(os.path.join(d, "bad.json"), "who")
            raise AssertionError("malformed JSON was read")
        except SystemExit as e:
            assert str(e).startswith("who: ") and "bad.json: not JSON" in str(e), e


def test_tables():
    assert tables.markdown_table(["a", "b"], [[1, "x"]]) == ["| a | b |", "|---|---|",
                                                             "| 1 | x |"]
    with tempfile.TemporaryDirectory() as d:
        tables.write_csv(os.path.join(d, "t.csv"), [{"a": 1, "b": 2}], fields=["b"])
        with open(os.path.join(d, "t.csv"), newline="") as f:
            assert f.read() == "b\r\n2\r\n"  # csv's own line ends, as the reports have them
        assert tables.reports_dir("x", "y", False, out_root=d) == os.path.join(d, "y")


def entry_scripts():
    """Files of experiments/ a user runs: shell scripts and Python files with a main, outside the
    campaigns' data (records of the commands as they ran) and the package's sourced recipes."""
    found = []
    for folder, dirs, files in os.walk(os.path.join(root, "experiments")):
        dirs[:] = [d for d in dirs if d not in ("data", "reports", "lab", "__pycache__")]
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith((".sh", ".sbatch")):  # a Slurm job script counts too
                found.append(path)
            elif name.endswith(".py"):
                with open(path) as f:
                    if '__name__ == "__main__"' in f.read():
                        found.append(path)
    return sorted(os.path.relpath(p, root) for p in found)


def test_entries():
    entries = entry_scripts()
    assert len(entries) <= MAX_ENTRIES, entries
    for path in entries:
        assert os.access(os.path.join(root, path), os.X_OK), f"{path} is not executable"
    # The package's modules are run through the entries only.
    for folder, _, files in os.walk(os.path.join(root, "experiments", "lab")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name)) as f:
                    text = f.read()
                assert '__name__ == "__main__"' not in text, os.path.join(folder, name)
                assert "sys.path.insert" not in text, os.path.join(folder, name)
    python = sys.executable
    for path in entries:
        if path.endswith(".py"):
            out = subprocess.run([python, os.path.join(root, path), "--help"],
                                 capture_output=True, text=True, cwd=root)
            assert out.returncode == 0 and out.stdout.strip(), (path, out.stderr)


if __name__ == "__main__":
    test_dispatch()
    test_replayed_trace()
    test_campaign()
    test_tables()
    test_entries()
    print("lab: ok")
