"""The tuner's search algorithm inside a plain Ray Tune run: nothing but ``tune.Tuner``.

Tunes the torch logistic regression of paper 001 (breast-cancer data) with GP-UCB-SDF under a
per-trial budget on Ray Tune's own ``time_total_s``, 2 trials at a time:

    python scripts/examples/tune_example.py --samples 30 --budget 2.0
"""

from __future__ import annotations

import argparse

from ray import tune

from trainables import get_trainable
from tuner.integrations.ray.tune_search import TunerSearch


def train_logreg(config: dict) -> None:
    """A Ray Tune function trainable: one training run, one report."""
    seed = config.pop("seed")
    tune.report(get_trainable("logreg")(config, {"epochs": 300}, seed=seed))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--concurrent", type=int, default=2)
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of time_total_s per trial")
    ap.add_argument("--algorithm", default="gp-ucb-sdf")
    args = ap.parse_args()

    search = TunerSearch(metric="accuracy", mode="max", algorithm=args.algorithm,
                         objective_bounds=(0.0, 1.0), budget=args.budget,
                         points_to_evaluate=[{"batch_size": 64, "lr": 0.1, "lr_decay": 1e-3}])
    tuner = tune.Tuner(
        train_logreg,
        param_space={"batch_size": tune.randint(32, 129), "lr": tune.loguniform(1e-6, 1.0),
                     "lr_decay": tune.loguniform(1e-6, 1.0), "seed": 0},
        tune_config=tune.TuneConfig(search_alg=search, num_samples=args.samples,
                                    max_concurrent_trials=args.concurrent, reuse_actors=True),
    )
    results = tuner.fit()
    best = results.get_best_result(metric="accuracy", mode="max")
    print(f"best accuracy {best.metrics['accuracy']:.4f} in {best.metrics['time_total_s']:.2f} s "
          f"with {best.config}")
    feasible = search.optimizer.best(feasible=True)
    if feasible is not None:
        print(f"best within the {args.budget:g} s budget: {feasible.value:.4f} with "
              f"{feasible.config}")


if __name__ == "__main__":
    main()
