"""``TunerScheduler`` as a drop-in for Ray's ``ASHAScheduler`` over many draws: the experiment
of ``test_tuner_scheduler_with_metric_mode_time_attr_and_max_t_alone`` (tests/test_tune_search.py:
20 configurations of Ray's random search, 2 at a time, nine epochs of a curve that rises to a
plateau set by the learning rate; the scheduler has ``metric``, ``mode``, ``time_attr`` and
``max_t`` only) once per seed of the search, in a real local Ray.  Prints per seed how many runs
were stopped early and the epoch the configuration with the highest plateau reached, then the
count of seeds where that run was stopped.

    python scripts/studies/dropin_draws.py --seeds 0-329 --out /tmp/dropin
"""

from __future__ import annotations

import argparse
import math
import time

import ray
from ray import tune
from ray.tune.search.basic_variant import BasicVariantGenerator

from tuner.integrations.ray import TunerScheduler

MAX_T = 9


def plateau(lr: float) -> float:
    return 0.92 - 0.06 * (math.log10(lr) + 2.5) ** 2


def saturating_run(config: dict) -> None:
    for epoch in range(1, MAX_T + 1):
        time.sleep(0.01)
        tune.report({"epoch": epoch, "score": plateau(config["lr"]) * (1 - math.exp(-epoch / 2))})


def one_seed(seed: int, out: str) -> tuple[int, int]:
    """(runs stopped early, the epoch the best configuration's run reached)."""
    tuner = tune.Tuner(
        saturating_run, param_space={"lr": tune.loguniform(1e-4, 1.0)},
        tune_config=tune.TuneConfig(
            scheduler=TunerScheduler(metric="score", mode="max", time_attr="epoch", max_t=MAX_T),
            num_samples=20, search_alg=BasicVariantGenerator(random_state=seed),
            max_concurrent_trials=2, reuse_actors=True),
        run_config=tune.RunConfig(name=f"seed{seed}", storage_path=out, verbose=0))
    results = list(tuner.fit())
    stopped = sum(r.metrics["epoch"] < MAX_T for r in results)
    best = max(results, key=lambda r: plateau(r.config["lr"]))
    return stopped, int(best.metrics["epoch"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0-29", help="a range FIRST-LAST")
    ap.add_argument("--out", required=True, help="Ray's storage folder")
    args = ap.parse_args()
    first, last = (int(s) for s in args.seeds.split("-"))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    best_stopped, counts = 0, []
    try:
        for seed in range(first, last + 1):
            stopped, epoch = one_seed(seed, args.out)
            counts.append(stopped)
            best_stopped += epoch < MAX_T
            print(f"seed {seed}: {stopped} of 20 stopped early; the best configuration reached "
                  f"epoch {epoch}", flush=True)
    finally:
        ray.shutdown()
    print(f"{len(counts)} seeds: runs stopped early {min(counts)}-{max(counts)} of 20 "
          f"(mean {sum(counts) / len(counts):.1f}); the best configuration stopped on "
          f"{best_stopped}")


if __name__ == "__main__":
    main()
