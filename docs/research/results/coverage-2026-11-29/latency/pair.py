"""One latency case: python pair.py N D SETTINGS_JSON -> one JSON line {median_ms, mean_ms, cpu_median_ms, cpu_mean_ms}:
n results and 8 trials running, then max(10, 5 % of n) timed suggest+tell cycles (with the refits each version schedules), the
same code path as scripts/bench/bench_latency.py time_ours; the `tuner` imported is whichever PYTHONPATH names."""
import json, math, statistics, sys, time
import numpy as np
from tuner import Optimizer, Settings

def objective(X):
    return 0.5 + 0.5 * np.sin(3 * X).mean(1) * np.cos(2 * X[:, :1].sum(1))

n, d, over = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
pending, seed = 8, 0
reps = max(10, math.ceil(0.05 * n))
rng = np.random.default_rng(seed)
space = {f"x{i}": {"type": "float", "low": 0.0, "high": 1.0} for i in range(d)}
opt = Optimizer(space, Settings(**over), algorithm="gp-ucb-sdf", objective_bounds=(0.0, 1.0),
                window=float("inf"), seed=seed)
X = rng.random((n + pending, d)); y = objective(X)
for x, v in zip(X[:n], y[:n]):
    s = opt.suggest(config={f"x{i}": float(x[i]) for i in range(d)}); opt.tell(s.trial_id, float(v))
for x in X[n:]:
    opt.suggest(config={f"x{i}": float(x[i]) for i in range(d)})
def step():
    w, c = time.perf_counter(), time.process_time()
    s = opt.suggest()
    w, c = time.perf_counter() - w, time.process_time() - c
    opt.tell(s.trial_id, float(objective(np.array([[s.config[f"x{i}"] for i in range(d)]]))[0]))
    return 1e3 * w, 1e3 * c
step()
t = [step() for _ in range(reps)]
print(json.dumps({"median_ms": statistics.median(a for a, _ in t), "mean_ms": statistics.mean(a for a, _ in t),
                  "cpu_median_ms": statistics.median(b for _, b in t), "cpu_mean_ms": statistics.mean(b for _, b in t), "reps": reps}))
