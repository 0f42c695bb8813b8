"""A synthetic trainable with stochastic, size-dependent run times: for fast end-to-end studies.

"Training" sleeps for run time = time_scale * (0.5 + width / 4) * LogNormal (mean 1,
coefficient of variation ``cv``), so wider "models" take longer, as real ones do.  The score is
a smooth function of (x, y) that also grows with width, in [0, 1]:

    accuracy = 0.5 + 0.45 * exp(-((x - 0.7)^2 + (y - 0.3)^2) / 0.08) * (0.55 + 0.45 width / 8)

so the best configurations are also the slowest: a run-time budget has something to trade.
``fail_above``: a configuration with x above it raises, to exercise failure handling.
"""

from __future__ import annotations

import math
import time

import numpy as np

from tuner.core.fields import Field

from .options import DELAY, Option, integer, number

SPACE = {"x": {"type": "float", "low": 0.0, "high": 1.0},
         "y": {"type": "float", "low": 0.0, "high": 1.0},
         "width": {"type": "int", "low": 1, "high": 8}}
CONFIG = {"x": number(0.0, 1.0), "y": number(0.0, 1.0), "width": integer(1)}


# a short run: its "training" is a sleep (Trainable.warm_up_options)
WARM_UP = {"time_scale": 0.0}
OPTIONS = {
    "time_scale": Option(0.2, number(0.0), "seconds of a width-2 run on average"),
    "cv": Option(0.3, number(0.0), "coefficient of variation of the run time (log-normal)"),
    "fail_above": Option(None, Field((float, None), minimum=0.0, maximum=1.0),
                         "configurations with x above this raise RuntimeError (null: never)"),
    **DELAY,
}


def accuracy(config: dict) -> float:
    bump = math.exp(-((config["x"] - 0.7) ** 2 + (config["y"] - 0.3) ** 2) / 0.08)
    return 0.5 + 0.45 * bump * (0.55 + 0.45 * config["width"] / 8)


def run(config: dict, options: dict, seed: int) -> tuple[float, float]:
    if options["fail_above"] is not None and config["x"] > options["fail_above"]:
        raise RuntimeError(
            f"diverged: x = {config['x']:.3f} > fail_above = {options['fail_above']}"
        )
    s2 = math.log1p(options["cv"] ** 2)
    noise = float(np.random.default_rng(seed).lognormal(-0.5 * s2, math.sqrt(s2)))
    start = time.perf_counter()
    end = start + options["time_scale"] * (0.5 + config["width"] / 4) * noise
    while (left := end - time.perf_counter()) > 0:   # "epochs": a stop request lands between them
        time.sleep(min(left, 0.05))
    return accuracy(config), time.perf_counter() - start
