"""How many trials of a simulated study were copies of a trial still running when they started
(within 1e-3 of it in every encoded coordinate), and the best score at 1/4, 1/2 and all trials.

    # running_correlation 0.999
    python scripts/bench/copies_of_running.py tuner hartmann6 3000 256 1
    # copies allowed (001)
    python scripts/bench/copies_of_running.py default-copies hartmann6 3000 256 1

Arguments: method (``tuner.bench.peers``), problem, trials, workers, seeds (and optionally the
first seed, 0 by default).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench_scale import best_by_trials  # noqa: E402  (this script's folder)
from tuner.bench.peers import make_method  # noqa: E402
from tuner.bench.problems import get_problem  # noqa: E402
from tuner.core.space import SearchSpace  # noqa: E402
from tuner.loop.simulator import RunTime, simulate  # noqa: E402


def main() -> None:
    if len(sys.argv) not in (6, 7):
        sys.exit(__doc__)
    method, name = sys.argv[1], sys.argv[2]
    n, workers, seeds, first = [int(v) for v in sys.argv[3:]] + [0] * (7 - len(sys.argv))
    warnings.simplefilter("ignore")
    p = get_problem(name)
    space = SearchSpace.from_dict(p.space)
    for seed in range(first, first + seeds):
        t0 = time.time()
        res = simulate(make_method(method, p, seed), p, RunTime(p.mean_runtime, p.cv), n_trials=n,
                       workers=workers, noise_std=p.noise_std, seed=1000 + seed)
        X = np.array([space.encode(c) for c in res.configs])
        copies = 0
        for t in range(len(X)):
            running = np.flatnonzero(res.finish[:t] > res.start[t])
            if len(running) and np.min(np.abs(X[running] - X[t]).max(1)) < 1e-3:
                copies += 1
        every = np.ones(len(res.start), dtype=bool)      # every trial counts, feasible or not
        best = best_by_trials(res, every, [n // 4, n // 2, n])
        print(
            f"{name} {method} seed {seed} W {workers} trials {n}: copies of a running trial "
            f"{copies}, "
            f"best at 1/4 1/2 1 {[round(v, 5) for v in best]}, f_opt {p.f_opt}, "
            f"wall {time.time() - t0:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
