"""Whether two harness runs gave the same results, row by row: the check that a default change
leaves the problems it cannot act on alone (every problem the change can act on goes through
the no-regression check instead).

    python scripts/checks/same_rows.py BEFORE/runs.csv AFTER/runs.csv
    python scripts/checks/same_rows.py runs.csv runs.csv --methods study study-ucb

Rows of ``tuner.bench.compare`` (or ``tuner.bench.curves``) are paired by problem, workers and
seed; a pair is the same when the trials started, the best scores by H/4, H/2 and H, the trials
over a limit and the whole best-so-far curve are equal (floats as written, no tolerance).
Prints the pairs that differ and a count; exits 1 when any differs or a row has no partner.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import pandas as pd

KEY = ["problem", "workers", "seed"]
COMPARED = ["trials", "best_0.25", "best_0.5", "best_1", "infeasible_trials", "curve"]


def differing(before: pd.DataFrame, after: pd.DataFrame) -> tuple[pd.DataFrame, int, int]:
    """The paired rows whose results differ, the number of pairs, and the number of rows
    without a partner.

    Args:
        before, after: rows of two runs (one method each).
    """
    pairs = before.merge(after, on=KEY, how="outer", suffixes=("_before", "_after"),
                         indicator=True)
    unpaired = int((pairs["_merge"] != "both").sum())
    pairs = pairs[pairs["_merge"] == "both"]
    columns = [c for c in COMPARED if f"{c}_before" in pairs]
    same = pd.Series(True, index=pairs.index)
    for c in columns:
        b, a = pairs[f"{c}_before"], pairs[f"{c}_after"]
        same &= (b == a) | (b.isna() & a.isna())
    return pairs.loc[~same, KEY + ["best_1_before", "best_1_after"]], len(pairs), unpaired


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--methods", nargs=2, default=None, metavar=("BEFORE", "AFTER"),
                    help="the method of each file to compare (default: each file's only one)")
    args = ap.parse_args(argv)
    runs = [pd.read_csv(args.before), pd.read_csv(args.after)]
    for i, rows in enumerate(runs):
        methods = sorted(rows["method"].unique())
        wanted = args.methods[i] if args.methods else methods[0]
        if wanted not in methods or (args.methods is None and len(methods) > 1):
            ap.error(f"{[args.before, args.after][i]} holds methods {methods}: "
                     "name one per file with --methods")
        runs[i] = rows[rows["method"] == wanted].drop(columns="method")
    diff, paired, unpaired = differing(*runs)
    if len(diff):
        print(diff.to_string(index=False))
    print(f"the same: {paired - len(diff)} of {paired} paired runs; "
          f"{len(diff)} differ; {unpaired} without a partner")
    return 1 if len(diff) or unpaired else 0


if __name__ == "__main__":
    sys.exit(main())
