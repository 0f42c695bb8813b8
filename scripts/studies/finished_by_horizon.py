"""Trials finished by H/4, H/2 and H in a random-search harness run (median of seeds 0-2) on every
harness problem, W = 4 and 16: how many results a method has seen at each horizon of the
best-or-tied comparison (the harness's ``completed`` column at each horizon).
``python scripts/studies/finished_by_horizon.py > finished_by_horizon.md``
"""
import numpy as np
from tuner.bench.compare import harness_run
from tuner.bench.metrics import FRACTIONS, run_metrics
from tuner.bench.problems import PROBLEMS, get_problem

print("| problem | W | finished by H/4 | by H/2 | by H |\n|---|---|---|---|---|")
for W in (4, 16):
    for name in PROBLEMS:
        p = get_problem(name)
        H = p.horizon(W)
        c = []
        for seed in (0, 1, 2):
            r = harness_run(p, W, "random", seed)
            c.append([run_metrics(r, p, q * H)["completed"] for q in FRACTIONS])
        med = np.median(np.array(c), axis=0)
        print(f"| {name} | {W} | {med[0]:g} | {med[1]:g} | {med[2]:g} |", flush=True)
