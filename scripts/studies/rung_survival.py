"""How far ASHA's premise holds on the learning-curve problems: for each rung r (1, 3, 9, ...
epochs), the rank correlation between a configuration's value at r and at full length, and the
share of the best 10 % of configurations (by final value) that ASHA would keep at r (in the top
1/eta of the values there).  Every configuration of a recorded table, 2,048 Sobol points of a
simulated family.

    python scripts/studies/rung_survival.py [--problems cnn-table crossing ...] [--eta 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tuner.bench.curves import PROBLEMS  # noqa: E402
from tuner.bench.problems import uniform_configs  # noqa: E402


def survival(name: str, eta: float) -> list[tuple[float, float, float]]:
    """[(rung, Spearman rho of value at the rung and final value, share of the top 10 % kept)]."""
    p = PROBLEMS[name]()
    fam = p.family
    configs = getattr(fam, "configs", None) or uniform_configs(fam.space, 2048, seed=0)
    finals = np.array([fam.score(c, p.epochs) for c in configs])
    top = finals >= np.quantile(finals, 0.9)
    rows, r = [], 1.0
    while r < p.epochs:
        at = np.array([fam.score(c, r) for c in configs])
        if np.isnan(at).any() or np.ptp(at) == 0:     # a table without a value there
            rows.append((r, float("nan"), float("nan")))
        else:
            kept = at >= np.quantile(at, 1 - 1 / eta)
            rows.append((r, float(spearmanr(at, finals)[0]), float(kept[top].mean())))
        r *= eta
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="*", default=["cnn-table", "logreg-table", "crossing",
                                                      "plateau"], choices=list(PROBLEMS))
    ap.add_argument("--eta", type=float, default=3.0)
    args = ap.parse_args(argv)
    print("| problem | rung | Spearman rho with the final value | best 10 % kept by ASHA |")
    print("|---|---|---|---|")
    for name in args.problems:
        for r, rho, kept in survival(name, args.eta):
            if np.isnan(rho):
                print(f"| {name} | {r:g} | - (no value there) | - |")
            else:
                print(f"| {name} | {r:g} | {rho:.2f} | {kept:.2f} |")


if __name__ == "__main__":
    main()
