"""scripts/reproduce/reproduce_contextual.py with the four ``-study`` methods at
``running_objective: minimum`` as well (named ``<method>-minimum``): the baseline of this folder's
contextual runs.  Run from the repository root: ``python docs/results/running-blend-2026-11-28/ctxmin.py
--dataset digits --runs 10 --defaults --workers 1 --methods cgp-ucb-level-mean-study-minimum ...``
(the same as ``scripts/reproduce/reproduce_contextual.py --variant minimum='{"running_objective": "minimum"}' ...``)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts" / "reproduce"))
import reproduce_contextual as rc  # noqa: E402

rc.add_variant("minimum", {"running_objective": "minimum"})

if __name__ == "__main__":
    rc.main()
