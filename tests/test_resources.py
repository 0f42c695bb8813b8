"""Resources per trial (``run.resources_per_trial``): a fractional GPU and custom Ray resources
reach Ray, so the trials see the GPU Ray gave them and no more run at once than fit.  A Ray of
its own in a subprocess that declares GPUs this machine does not have (``num_gpus``)."""

import json
import subprocess
import sys
import textwrap

import pytest

from stores import sqlite_store

SCRIPT = '''
import json, os, sys, time
import ray
import tuner
from tuner.study.schema import ConfigError

def fit(config):
    time.sleep(0.4)
    return {"score": config["x"], "gpus": os.environ.get("CUDA_VISIBLE_DEVICES", "unset")}

ray.init(address="local", num_cpus=4, num_gpus=1, resources={"licence": 2}, include_dashboard=False,
         log_to_driver=False)
common = dict(space={"x": {"type": "float", "low": 0.0, "high": 1.0}}, objective="score",
              mlflow={"tracking_uri": "sqlite:///mlflow.db"}, output="runs")
result = tuner.run(fit, study="gpu", trials=6, max_concurrent=2,
                   run={"resources_per_trial": {"gpu": 0.5, "licence": 1}}, **common)
try:
    tuner.run(fit, study="crowded", trials=3, max_concurrent=3,
              run={"resources_per_trial": {"GPU": 0.5}}, **common)
    crowded = None
except ConfigError as exc:
    crowded = str(exc)
state = json.load(open("runs/gpu/state.json"))
trials = [t for t in state["optimizer"]["trials"]]
print("RESULT " + json.dumps({
    "finished": result.count("FINISHED"),
    "gpus": sorted({w.get("attr.gpus") for w in state["session"]["where"].values()}),
    "spans": [[t["start_time"], t["finish_time"]] for t in trials], "crowded": crowded}))
'''


@pytest.mark.slow
def test_a_fractional_gpu_per_trial_reaches_ray_and_bounds_the_trials_at_once(tmp_path):
    (tmp_path / "gpu_study.py").write_text(textwrap.dedent(SCRIPT))
    sqlite_store(tmp_path)                        # the script's sqlite:///mlflow.db
    p = subprocess.run([sys.executable, "gpu_study.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, p.stdout[-2000:] + p.stderr[-3000:]
    out = json.loads(line[len("RESULT "):])
    assert out["finished"] == 6
    assert out["gpus"] == ["0"]                   # Ray's GPU 0, shared by two half-GPU trials
    # at most 2 trials at once (1 GPU / 0.5), and 2 did run together
    events = sorted([(s, 1) for s, _ in out["spans"]] + [(e, -1) for _, e in out["spans"]],
                    key=lambda ev: (ev[0], ev[1]))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak == 2
    assert out["crowded"] is not None and "run.resources_per_trial.GPU" in out["crowded"]
    assert "only 2 trial(s) can run at once" in out["crowded"]
