"""A study run as its steps: from the repository root (the steps name their paths from there), the
built binary checked first, and a failing command ending the study with its exit status; an
entry whose whole study runs when no subcommand is named; the entry under the repository's
virtual environment, where the studies' packages (matplotlib) are; and a part's argument parser.

    from lab import steps
    steps.in_repository("study")
    steps.faultline("sweep", "configs/sweeps/real-traces.json")
"""
import argparse
import os
import subprocess
import sys

from lab import cli
from lab.paths import FAULTLINE, REPO


def in_venv():
    """Runs this program again under .venv/bin/python where that exists and this is another
    interpreter (as the shell scripts chose the venv's python); returns where it is the one."""
    venv = os.path.join(REPO, ".venv")
    python = os.path.join(venv, "bin", "python")
    if os.path.exists(python) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        sys.stdout.flush()
        os.execv(python, [python] + sys.argv)


def in_repository(who):
    """Moves into the repository root; SystemExit naming WHO where build/faultline is missing."""
    os.chdir(REPO)
    if not os.access(FAULTLINE, os.X_OK):
        raise SystemExit(f"{who}: build/faultline is missing: run ./setup.sh")


def run(*command, quiet=False):
    """Runs COMMAND (its words) with our output (QUIET: its standard output dropped); SystemExit
    with its exit status where it fails."""
    sys.stdout.flush()  # what we printed comes before what it prints
    done = subprocess.run([str(word) for word in command],
                          stdout=subprocess.DEVNULL if quiet else None)
    if done.returncode:
        raise SystemExit(done.returncode)


def faultline(*args, quiet=False):
    """`build/faultline ARGS...` from the repository root, as run() runs it."""
    run(os.path.join("build", "faultline"), *args, quiet=quiet)


def main_or_dispatch(doc, subcommands, default, argv=None):
    """An entry's exit status: ARGV (sys.argv[1:] by default) that starts with a subcommand's
    name, -h or --help goes to cli.dispatch (DOC and the subcommands); any other, none included,
    to DEFAULT(argv, prog), the whole study."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and (argv[0] in subcommands or argv[0] in ("-h", "--help")):
        return cli.dispatch(doc, subcommands, argv)
    return default(argv, sys.argv[0]) or 0


def parser(doc, prog, *positionals, faultline=None):
    """A part's argument parser: PROG (the name the entry gives it), DOC's first line as its
    description, the POSITIONALS (each named as its help shows it, OUT_DIR; read as args.out_dir)
    and, where FAULTLINE is given, --faultline BIN with that default."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    for name in positionals:
        ap.add_argument(name.lower(), metavar=name)
    if faultline is not None:
        ap.add_argument("--faultline", default=faultline)
    return ap
