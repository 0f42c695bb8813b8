"""The one way the scripts write their result rows: a CSV with the first row's keys as header."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Mapping, Sequence


def write_csv(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
