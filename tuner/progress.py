"""What a running study shows on the terminal: a progress line and the final summary table."""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence, TextIO


@dataclass
class Snapshot:
    """The numbers the progress line shows."""

    done: int
    failed: int
    running: int
    total: int
    best: float | None
    best_trial: int | None
    violations: int
    utilization: float
    elapsed: float


def format_line(s: Snapshot) -> str:
    best = "-" if s.best is None else f"{s.best:.4f} (trial {s.best_trial})"
    return (f"[{_clock(s.elapsed)}] finished {s.done}/{s.total}  failed {s.failed}  "
            f"running {s.running}  best {best}  over budget {s.violations}  "
            f"busy {100 * s.utilization:.0f}%")


class Progress:
    """One line per finished trial, and at most every ``interval`` seconds while waiting."""

    def __init__(self, stream: TextIO | None = None, interval: float = 10.0):
        self.stream = stream or sys.stdout
        self.interval = interval
        self._last = -math.inf

    def update(self, snapshot: Snapshot, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= self.interval:
            self._last = now
            print(format_line(snapshot), file=self.stream, flush=True)

    def message(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


def summary_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A fixed-width text table (numbers with 4 significant decimals)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "-" if not math.isfinite(v) else f"{v:.4g}"
        return "-" if v is None else str(v)

    body = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(columns)]
    line = lambda vals: "  ".join(v.rjust(w) for v, w in zip(vals, widths))  # noqa: E731
    return "\n".join([line(list(columns)), line(["-" * w for w in widths])] + [line(b) for b in body])


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}"
