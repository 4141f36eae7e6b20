"""The entry points' shape: one command per question, its parts as subcommands.

    sys.exit(cli.dispatch(__doc__, {"simulate": fidelity, "report": (report, "one campaign")}))

`ENTRY --help` prints the entry's docstring and its subcommands; `ENTRY SUB --help` the
subcommand's own options. A subcommand is a module, whose `main(argv, prog)` it runs and whose
`SUMMARY` is its line in the list, or a pair (main, summary). `main` parses ARGV (the arguments
after the subcommand's name) with `prog` as its name in messages, and returns an exit status
(None counts as 0)."""
import sys


def dispatch(doc, subcommands, argv=None):
    """Runs the subcommand named first in ARGV (sys.argv[1:] by default) and returns its exit
    status; an unknown or missing name prints DOC with the list and returns 2."""
    argv = sys.argv[1:] if argv is None else argv
    entry = sys.argv[0]
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(doc, subcommands))
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in subcommands:
        print(f"{entry}: unknown subcommand '{name}'; expected one of: "
              + ", ".join(subcommands), file=sys.stderr)
        return 2
    status = _parts(subcommands[name])[0](rest, f"{entry} {name}")
    return status or 0


def _parts(subcommand):
    """(main, summary) of a subcommand given as a module or as the pair."""
    if isinstance(subcommand, tuple):
        return subcommand
    return subcommand.main, subcommand.SUMMARY


def usage(doc, subcommands):
    width = max(len(name) for name in subcommands)
    lines = [doc.strip(), "", "subcommands (SUB --help for each one's options):"]
    lines += [f"  {name:<{width}}  {_parts(sub)[1]}" for name, sub in subcommands.items()]
    return "\n".join(lines)
