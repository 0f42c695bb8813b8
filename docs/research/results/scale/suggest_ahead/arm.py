import sys, json
sys.path.insert(0, "/work/main/scripts/bench"); sys.path.insert(0, "/work/main")
from pathlib import Path
import bench_scale
from tuner.core.persist import append_row
name, ov, out = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
jobs = [("hpo-mixed-budget", s) for s in range(10)] + [("ackley5", s) for s in range(10)] + [("hartmann6", s) for s in range(5)]
for prob, seed in jobs:
    r = bench_scale.run(prob, "tuner", seed, 16, 800, ov or None)
    r["method"] = name
    append_row(out, r)
    print(prob, seed, r["best_1"], flush=True)
