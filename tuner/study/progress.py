"""What a running study shows on the terminal: a progress line and the final summary table."""

from __future__ import annotations

import math
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence, TextIO

from tuner.core.trial import mode_sign


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
    best_over: float | None = None       # best score among finished trials over the budget
    best_over_trial: int | None = None
    stopped: int = 0                     # stopped by a rule: early (STOPPED) or at a limit
    projected: int = 0                   # over the budget by a stopped run's projected time


def format_line(s: Snapshot) -> str:
    best = "-" if s.best is None else f"{s.best:.4f} (trial {s.best_trial})"
    if s.best is None and s.best_over is not None:
        best = f"- ({s.best_over:.4f} over budget, trial {s.best_over_trial})"
    projected = f" ({s.projected} projected)" if s.projected else ""
    return (f"[{_clock(s.elapsed)}] finished {s.done}/{s.total}  stopped {s.stopped}  "
            f"failed {s.failed}  running {s.running}  best {best}  over budget "
            f"{s.violations}{projected}  busy {100 * s.utilization:.0f}%")


class Progress:
    """A line when trials end (at most one per ``min_gap`` seconds), else one every
    ``interval`` seconds while waiting."""

    def __init__(self, stream: TextIO | None = None, interval: float = 10.0, min_gap: float = 0.5):
        self.stream = stream or sys.stdout
        self.interval, self.min_gap = interval, min_gap
        self._last = -math.inf

    def due(self, news: bool = False) -> bool:
        """Whether a line is due now, with (``news``) or without trials that ended since the
        last line."""
        wait = self.min_gap if news else self.interval
        return time.monotonic() - self._last >= wait

    def next_due(self, news: bool = False) -> float:
        """When a line is due (``time.monotonic`` seconds)."""
        return self._last + (self.min_gap if news else self.interval)

    def update(self, snapshot: Snapshot, force: bool = False) -> None:
        """Print the line if it is due (``force``: the trials that ended are news)."""
        if self.due(force):
            self._last = time.monotonic()
            print(format_line(snapshot), file=self.stream, flush=True)

    def message(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    @contextmanager
    def phase(self, text: str) -> Iterator[None]:
        """``text ...`` at once, then ``  done in X s`` (or that it failed) on a line of its own,
        so that what the step itself prints (Ray, MLflow) does not break either line."""
        print(f"{text} ...", file=self.stream, flush=True)
        t0 = time.perf_counter()
        try:
            yield
        except BaseException:
            print(f"  failed after {time.perf_counter() - t0:.1f} s", file=self.stream, flush=True)
            raise
        print(f"  done in {time.perf_counter() - t0:.1f} s", file=self.stream, flush=True)


def rank_finished(rows: Sequence[dict[str, Any]], metric: str, mode: str) -> list[dict[str, Any]]:
    """The finished rows of a trial table, those within the budget first, then by score."""
    sign = mode_sign(mode)
    done = [r for r in rows if r["status"] == "FINISHED" and r.get(metric) is not None]
    return sorted(done, key=lambda r: (bool(r.get("over_budget")), -sign * r[metric]))


def not_finished(rows: Sequence[dict[str, Any]], limit: int | None = None) -> str:
    """The rows of a trial table that did not finish, one line each with the reason ('' if
    none); past ``limit`` lines, a count of the rest."""
    others = [r for r in rows if r["status"] != "FINISHED"]
    if not others:
        return ""
    shown = others if limit is None else others[:limit]
    lines = [f"  trial {r['trial']}: {r['status']}, {r.get('reason') or '-'}" for r in shown]
    if len(others) > len(shown):
        lines.append(f"  ... and {len(others) - len(shown)} more in trials.csv")
    return "not finished:\n" + "\n".join(lines)


def summary_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A fixed-width text table (numbers with 4 significant decimals)."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return "-" if not math.isfinite(v) else f"{v:.4g}"
        return "-" if v is None else str(v)

    body = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(b[i]) for b in body]) for i, c in enumerate(columns)]
    line = lambda vals: "  ".join(v.rjust(w) for v, w in zip(vals, widths))  # noqa: E731
    return "\n".join(
        [line(list(columns)), line(["-" * w for w in widths])] + [line(b) for b in body]
    )


def _clock(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}"
