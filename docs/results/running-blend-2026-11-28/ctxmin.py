"""scripts/reproduce/reproduce_contextual.py with the four ``-study`` methods at
``running_objective: minimum`` as well (named ``<method>-minimum``): the baseline of this folder's
contextual runs.  Run from the repository root: ``python docs/results/running-blend-2026-11-28/ctxmin.py
--dataset digits --runs 10 --defaults --workers 1 --methods cgp-ucb-level-mean-study-minimum ...``."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts" / "reproduce"))
import reproduce_contextual as rc  # noqa: E402

for name in ("cgp-ucb-level-mean-study", "gp-ucb-sdf-study", "cgp-ts-level-mean-study", "gp-ts-sdf-study"):
    algorithm, kind, extra = rc.METHODS[name]
    rc.METHODS[name + "-minimum"] = (algorithm, kind, {**extra, "running_objective": "minimum"})

if __name__ == "__main__":
    rc.main()
