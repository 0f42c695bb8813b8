"""``tuner simulate``: a study against a synthetic objective on a simulated clock (the one study
loop, ``tuner.loop.simulator``), configured by a YAML file with a ``simulation`` section."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from tuner.core.fields import Field
from tuner.core.persist import write_table
from tuner.study.schema import ConfigError, check_section
from tuner.study.config import optimizer_settings, read_yaml

if TYPE_CHECKING:
    from tuner.core.settings import Settings

SIM_SCHEMA = {"objective": Field((dict,), {"kind": "gp-sample-1d"}),
              "delay": Field((dict,), {"kind": "poisson", "mean": 10}),
              "workers": Field((int, None), None, above=0), "trials": Field((int,), 200, above=0),
              "noise_std": Field((float,), 0.0), "seed": Field((int,), 0)}


@dataclass
class SimulationConfig:
    study: str
    settings: Settings
    objective: dict[str, Any]
    delay: dict[str, Any]
    workers: int | None
    trials: int
    noise_std: float
    seed: int
    raw: dict[str, Any] = field(default_factory=dict)


def load_simulation(
    path: str | Path, overrides: Mapping[str, Any] | None = None
) -> SimulationConfig:
    data = read_yaml(path)
    top = check_section("config", data, {"study": Field((str,), Path(path).stem),
                                         "optimizer": Field((dict, None)),
                                         "simulation": Field((dict,), required=True)})
    opt = dict(top["optimizer"] or {})
    sim = dict(top["simulation"])
    for key, value in (overrides or {}).items():
        if value is None:
            continue
        if key in ("algorithm", "seed"):
            opt[key] = value
        if key in ("trials", "workers", "seed"):
            sim[key] = value
    sim = check_section("simulation", sim, SIM_SCHEMA)
    return SimulationConfig(study=top["study"], settings=optimizer_settings(opt),
                            objective=sim["objective"], delay=sim["delay"], workers=sim["workers"],
                            trials=sim["trials"], noise_std=sim["noise_std"], seed=sim["seed"],
                            raw=data)


def simulate_study(args: argparse.Namespace) -> int:
    """``tuner simulate CONFIG``: the study on a simulated clock; prints progress and a regret
    table, and writes the trial table, the regret plot and the optimizer state."""
    from tuner.core.optimizer import Optimizer
    from tuner.loop.problems import make_objective
    from tuner.loop.simulator import make_delay, simulate

    cfg = load_simulation(args.config, {"algorithm": args.algorithm, "trials": args.trials,
                                        "workers": args.workers, "seed": args.seed})
    try:
        fn = make_objective(cfg.objective)
        delay = make_delay(cfg.delay)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    opt = Optimizer(fn.space, cfg.settings, domain=fn.grid[:, None])
    out = Path(args.out) / cfg.study
    out.mkdir(parents=True, exist_ok=True)
    print(f"study {cfg.study}: {cfg.settings.algorithm}, {cfg.trials} trials, delay {cfg.delay}, "
          f"workers {cfg.workers or 'one query per iteration'}", flush=True)
    t0 = time.perf_counter()
    step = max(1, cfg.trials // 10)

    def progress(n: int) -> None:
        if n % step == 0 or n == cfg.trials:
            best = opt.best()
            print(f"  {n:5d}/{cfg.trials} started  running {len(opt.running):3d}  "
                  f"best {'-' if best is None else f'{best.value:.4f}'}  "
                  f"elapsed {time.perf_counter() - t0:6.1f}s", flush=True)

    res = simulate(optimizer=opt, objective=fn, delay=delay, n_trials=cfg.trials,
                   workers=cfg.workers, noise_std=cfg.noise_std, seed=cfg.seed, f_opt=fn.f_opt,
                   progress=progress)
    regret = res.simple_regret()
    opt.save(out / "optimizer_state.json")
    write_table(
        out / "trials.csv",
        [
            {"trial_id": i, "x": c["x"], "f": f, "start": s, "finish": e,
             "simple_regret_at_start": regret[i]}
            for i, (c, f, s, e) in enumerate(zip(res.configs, res.f_true, res.start, res.finish))
        ],
    )
    plot_regret(regret, out / "simple_regret.png", cfg.study, cfg.settings.algorithm)
    marks = [m for m in (10, 25, 50, 100, 200, 500, 1000, 2000) if m <= len(regret)]
    print("\n| T | simple regret |\n|---|---|")
    for m in marks:      # '-': no evaluation had completed by then
        print(f"| {m} | {'-' if np.isnan(regret[m - 1]) else f'{regret[m - 1]:.4f}'} |")
    print(
        f"\nbest f {res.f_true[res.finish <= res.finish.max()].max():.4f} (optimum "
        f"{fn.f_opt:.4f}); "
        f"median suggest {1e3 * np.median(res.suggest_seconds):.1f} ms; "
        f"wrote {out}/{{trials.csv,simple_regret.png,optimizer_state.json}}"
    )
    return 0


def plot_regret(regret: np.ndarray, path: Path, study: str, algorithm: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot(np.arange(1, len(regret) + 1), regret)
    ax.set_xlabel("iteration T")
    ax.set_ylabel("simple regret (completed evaluations)")
    ax.set_yscale("log")
    ax.set_title(f"{study}: {algorithm}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


