"""The README's main job (`tuner run`, the built-in study) on an idle and on a busy machine.

For each number of CPU burners (processes spinning `while True: pass` at this script's own
priority, started and stopped here by PID), run `tuner run` in a fresh folder (its own Ray, its
own `mlflow.db`) and record: the time to the first line, each start-up step as the run printed
it, when its banner came, the study's own time, the whole command's time, and how many trials
finished.  The tests run a 6-trial version of this (`tests/test_busy_machine.py`); this is the full
30-trial one. With ``--after-budget`` the burners start only once the budget is measured (the load
changes mid-study); each row also records the best score within the budget and the trials over it.

    python scripts/bench/main_job_under_load.py --burners 0 2 --out docs/research/results/main_job
    python scripts/bench/main_job_under_load.py --burners 2 --after-budget --seeds 0 1 2 -- \
        configs/cnn.yaml
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# A start-up step prints "<what> ..." and later "  done in X s" (other output may come between).
STEPS = {
    "ray": "starting Ray",
    "warm_up": "warming up",
    "reference": "reference run for the budget",
}
LINES = {"mlflow": r"^MLflow .*ready in ([0-9.]+) s", "budget": r"^budget: .* = ([0-9.]+) s",
         "study": r"workers busy \d+% of ([0-9.]+) s", "finished": r"^(\d+) finished, ",
         "over_budget": r"^\d+ finished, .* (\d+) over budget",
         "best": r"^best: trial \d+, \w+ ([-0-9.e]+), (?!OVER BUDGET)"}   # within the budget


def step_seconds(lines: list[str], start: str) -> float | None:
    """The ``done in X s`` that follows the line starting with ``start``."""
    begun = False
    for ln in lines:
        begun = begun or ln.startswith(start)
        m = re.match(r"^  done in ([0-9.]+) s", ln) if begun else None
        if m:
            return float(m.group(1))
    return None


def run_once(burners: int, extra: list[str], after_budget: bool = False) -> dict:
    """One `tuner run` with ``burners`` CPU-burning processes beside it (from the start, or from
    when the budget line is printed)."""
    def burn() -> list[subprocess.Popen]:
        return [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)
        ]

    procs = [] if after_budget else burn()
    try:
        with tempfile.TemporaryDirectory(prefix="main-job-") as d:
            t0 = time.perf_counter()
            p = subprocess.Popen([sys.executable, "-m", "tuner.app.cli", "run", *extra], cwd=d,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            first, lines = None, []     # first: when the study's banner ("study NAME: ...") came
            for line in p.stdout:
                if first is None and line.startswith("study "):
                    first = time.perf_counter() - t0
                if after_budget and not procs and line.startswith("budget: "):
                    procs = burn()
                lines.append(line.rstrip("\n"))
            rc = p.wait()
            total = time.perf_counter() - t0
    finally:
        for b in procs:
            b.kill()
            b.wait()
    return read_lines(
        {"burners": burners, "after_budget": after_budget, "args": extra, "exit_code": rc,
         "total_s": round(total, 1), "first_line_s": round(first or 0.0, 1), "lines": lines}
    )


def read_lines(row: dict) -> dict:
    """``row`` with the start-up steps and the summary read from the run's printed ``lines``."""
    lines = row["lines"]
    for key, start in STEPS.items():
        row[key] = step_seconds(lines, start)
    for key, pattern in LINES.items():
        m = next((re.search(pattern, ln) for ln in lines if re.search(pattern, ln)), None)
        row[key] = float(m.group(1)) if m else None
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--burners", type=int, nargs="+", default=[0, 2])
    ap.add_argument("--out", type=Path, help="write rows.json and table.md here")
    ap.add_argument("--after-budget", action="store_true",
                    help="start the burners once the budget is measured, not before the run")
    ap.add_argument("--seeds", type=int, nargs="*", default=[None], help="a run per seed (--seed)")
    ap.add_argument("--rows", type=Path, help="no runs: the table again from this rows.json")
    ap.add_argument("args", nargs="*", help="extra `tuner run` arguments (after --)")
    a = ap.parse_args()
    if a.rows:
        rows = [read_lines(r) for r in json.loads(a.rows.read_text())]
        return write(rows, a.out or a.rows.parent)
    a.args = [str(Path(x).resolve()) if Path(x).is_file() else x for x in a.args]   # run elsewhere
    rows = []
    for n in a.burners:
        for seed in a.seeds:
            row = run_once(n, a.args + ([] if seed is None else ["--seed", str(seed)]),
                           a.after_budget)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "lines"}), flush=True)
    write(rows, a.out)


def write(rows: list[dict], out: Path | None) -> None:
    """The table (printed), and with ``out`` rows.json and table.md there."""
    table = [
        "| other CPU-bound processes | whole command | banner | Ray | warm-up | reference run "
        "| MLflow (alongside) | budget | study | finished | over budget | best within it | exit |",
        "|" + "---|" * 13,
    ]
    for r in rows:
        cell = lambda v, u=" s": "-" if v is None else f"{v:g}{u}"  # noqa: E731
        table.append(f"| {r['burners']} | {r['total_s']:g} s | {cell(r['first_line_s'])} | "
                     f"{cell(r['ray'])} | {cell(r['warm_up'])} | {cell(r['reference'])} | "
                     f"{cell(r['mlflow'])} | {cell(r['budget'])} | {cell(r['study'])} | "
                     f"{cell(r['finished'], '/30')} | {cell(r['over_budget'], '')} | "
                     f"{cell(r['best'], '')} | {r['exit_code']} |")
    print("\n".join(table))
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "rows.json").write_text(json.dumps(rows, indent=1))
        (out / "table.md").write_text("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
