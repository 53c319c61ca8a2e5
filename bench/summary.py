"""Condenses bench.py's result tables (bench/results/bench_*.md) into the short tables the README
and docs/performance.md show: per op, pass and dtype, the speed-up over F.gelu eager (the eager
composition for the fused ops) of each form, as the range over the sizes measured.

    python bench/summary.py bench/results/bench_cpu_amd-epyc-family-25-model-17_avx512.md
    python bench/summary.py A.md B.md --labels default steady   # side by side, one column each
    python bench/summary.py A.md B.md --labels AVX-512 AVX2 --plot docs/speed_cpu.png
    python bench/summary.py A.md B.md --forms none tanh --dtypes float32 bfloat16   # some rows
"""

import argparse
import re
import sys
from collections import defaultdict


def read_rows(path):
    """The rows of a bench.py markdown table, as dicts of its columns."""
    header, rows = None, []
    with open(path) as f:
        for line in f:
            if not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set(line) <= set("|-\n "):
                rows.append(dict(zip(header, cells)))
    return rows


def machine_line(path):
    with open(path) as f:
        for line in f:
            if line.startswith("- machine:"):
                return line.split(":", 1)[1].strip()
    return path


def speedups(path, column="vs eager", forms=None, dtypes=None):
    """{(op, pass, dtype, form): [speed-up at each size]}, of the forms and dtypes named (all
    where None)."""
    found = defaultdict(list)
    for row in read_rows(path):
        key = (row["op"], row["pass"], row["dtype"], row["variant"])
        if (forms is None or key[3] in forms) and (dtypes is None or key[2] in dtypes):
            found[key].append(float(re.sub(r"x$", "", row[column])))
    return found


def span(values):
    low, high = min(values), max(values)
    return f"{low:.2f}" if abs(high - low) < 0.005 else f"{low:.2f}–{high:.2f}"


def table(data, labels):
    """The markdown table of speedups() of each file, a column per form and file."""
    keys = list(dict.fromkeys(k for d in data for k in d))
    forms = list(dict.fromkeys(k[3] for k in keys))
    rows = list(dict.fromkeys(k[:3] for k in keys))
    head = ["op", "pass", "dtype"] + [f"{f} {l}".strip() for f in forms for l in labels]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op, pass_, dtype in rows:
        cells = [span(d[(op, pass_, dtype, f)]) if (op, pass_, dtype, f) in d else "—"
                 for f in forms for d in data]
        lines.append(f"| {op} | {pass_} | {dtype} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(data, labels, column, path):
    """One bar per op, pass, dtype and form: the median speed-up over the sizes, per file."""
    import statistics

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys(k for d in data for k in d))
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(keys) * len(data) + 1.2))
    height = 0.8 / len(data)
    for n, (d, label) in enumerate(zip(data, labels)):
        values = [statistics.median(d[k]) if k in d else 0.0 for k in keys]
        # Bars from 1 (as fast as F.gelu), to the left where gelu_ext is slower.
        ax.barh([i + n * height for i in range(len(keys))], [v - 1 for v in values], left=1,
                height=height, label=label)
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(keys))])
    ax.set_yticklabels([" ".join(k) for k in keys], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_xlabel(f"speed-up over F.gelu ({column.split()[-1]}), median over sizes; above 1: "
                  "gelu_ext faster", fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    print(f"wrote {path}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+", help="bench.py markdown results")
    parser.add_argument("--labels", nargs="+", help="a column label per file")
    parser.add_argument("--column", default="vs eager", choices=["vs eager", "vs compile"])
    parser.add_argument("--plot", metavar="PNG", help="also draw the speed-ups as bars")
    parser.add_argument("--forms", nargs="+", help="only these forms (none, tanh, sigmoid)")
    parser.add_argument("--dtypes", nargs="+", help="only these dtypes (float32, ...)")
    args = parser.parse_args()
    labels = args.labels or ([""] if len(args.paths) == 1 else
                             [machine_line(p) for p in args.paths])
    if len(labels) != len(args.paths):
        parser.error(f"{len(args.paths)} files but {len(labels)} labels")
    data = [speedups(p, args.column, args.forms, args.dtypes) for p in args.paths]
    if not any(data):
        parser.error("no results of the forms and dtypes named")
    print(table(data, labels))
    if args.plot:
        plot(data, labels, args.column, args.plot)


if __name__ == "__main__":
    main()
