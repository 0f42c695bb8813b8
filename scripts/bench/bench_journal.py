"""Per-step cost and size of a study-state journal line at n trials (a budgeted GP study,
32 running): ``python scripts/bench/bench_journal.py 1500 10000``."""

import sys
import tempfile
import time
from pathlib import Path
import numpy as np
from tuner import Optimizer
from tuner.study.state import StudyStateFile, journal_path

space = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "y": {"type": "float", "low": 0.0, "high": 1.0}}
for n in map(int, sys.argv[1:]):
    clock = [0.0]
    opt = Optimizer(
        space,
        seed=0,
        constraints=[{"metric": "runtime", "limit": 1.0, "type": "budget", "runtime": True}],
        clock=lambda: clock[0],
    )
    rng = np.random.default_rng(0)
    running = []

    def step():
        s = opt.suggest(config={"x": rng.random(), "y": rng.random()})
        running.append(s)
        clock[0] += 0.04
        if len(running) > 32:
            r = running.pop(0)
            opt.tell(r.trial_id, rng.random(), {"runtime": rng.random() * 2})

    for i in range(n):
        step()
    opt.suggest()  # the models absorb the results
    with tempfile.TemporaryDirectory() as tmp:
        f = StudyStateFile(Path(tmp) / "state.json")
        where = {}
        session = {"elapsed_before": 0.0, "busy_seconds": 0.0, "run_id": None}
        t = time.perf_counter()
        f.save(lambda: {}, opt, session, where, set(), whole=True)
        whole_ms = (time.perf_counter() - t) * 1e3
        ts = []
        for i in range(200):
            step()
            opt.suggest() if i % 50 == 0 else None
            t = time.perf_counter()
            f.save(lambda: {}, opt, session, where, set())
            ts.append(time.perf_counter() - t)
        lines = (
            journal_path(Path(tmp) / "state.json").read_text().splitlines()
            if journal_path(Path(tmp) / "state.json").exists()
            else []
        )
        print(
            f"n={n}: journal save median {1e3 * np.median(ts):.3f} ms, mean "
            f"{1e3 * np.mean(ts):.3f} ms (whole rewrites included); "
            f"whole write {whole_ms:.1f} ms, state {f._state_bytes / 1e3:.0f} KB; lines now "
            f"{np.mean([len(line) for line in lines]) if lines else 0:.0f} B",
            flush=True,
        )
