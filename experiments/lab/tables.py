"""Writing what a study found: CSV, markdown tables, JSON, the figure style, and where a report
goes (`STUDY/reports/NAME` when asked to, else `out/STUDY/NAME`)."""
import csv
import json
import os

from lab.paths import EXPERIMENTS, REPO

FIGURE_DPI = 120


def write_csv(path, rows, fields=None):
    """Rows (dicts) as CSV, columns FIELDS (default: the first row's keys)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fields or list(rows[0].keys()), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def markdown_table(header, rows):
    """A markdown table: HEADER a list of column titles, ROWS lists of cells (already text)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def write_json(path, doc, sort_keys=False, newline=True):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, sort_keys=sort_keys)
        if newline:
            f.write("\n")


def pyplot():
    """matplotlib's pyplot, drawing to files (no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path):
    """Every figure is saved alike: PNG at FIGURE_DPI."""
    fig.savefig(path, dpi=FIGURE_DPI)


def finish_figure(fig, path, ax=None, xlabel=None, ylabel=None, title=None, legend=None,
                  close=False):
    """A figure's last strokes: AX's labels, title and legend (LEGEND: its font size), each where
    given, the layout tightened, then saved as save_figure saves it (and closed with CLOSE)."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if legend is not None:
        ax.legend(fontsize=legend)
    fig.tight_layout()
    save_figure(fig, path)
    if close:
        pyplot().close(fig)


def reports_dir(study, name, write_reports, out_root=None):
    """Where a script writes a report: STUDY/reports/NAME under experiments/ when asked to
    (--write-reports), else out/STUDY/NAME (or OUT_ROOT/NAME) in the repository."""
    if write_reports:
        path = os.path.join(EXPERIMENTS, study, "reports", name)
    else:
        path = os.path.join(out_root or os.path.join(REPO, "out", study), name)
    os.makedirs(path, exist_ok=True)
    return path
