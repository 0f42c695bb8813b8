"""Every shipped study config loads, and configs/cnn.yaml is the built-in default study."""

from pathlib import Path

import pytest

from tuner.app.simulation import load_simulation
from tuner.study.defaults import DEFAULT_STUDY
from tuner.study.config import load_study

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize(
    "path",
    sorted(p for p in CONFIGS.glob("*.yaml") if "simulation" not in p.read_text()),
    ids=lambda p: p.name,
)
def test_shipped_run_configs_load(path):
    cfg = load_study(path)
    assert cfg.run.trials > 0 and cfg.space


def test_shipped_simulation_config_loads():
    assert load_simulation(CONFIGS / "synthetic.yaml").trials > 0


def test_the_default_study_is_configs_cnn_yaml():
    assert load_study(DEFAULT_STUDY).resolved() == load_study(CONFIGS / "cnn.yaml").resolved()


def test_a_study_chooses_its_warp_unless_its_config_says_otherwise():
    """Studies of training runs start from ``output_warp: auto`` (the tail warp or the copula,
    chosen by held-out ranks), ``kernel: matern52``, the
    noise floor, ``believe_past: 3``, ``finish_by_deadline``, ``startup_until_result`` and the
    lean start-up design (the bare Optimizer does not); a config or TunerSearch argument that
    names the setting wins."""
    from tuner import Settings
    from tuner.integrations.ray.tune_search import TunerSearch

    base = {"study": "warp", "trainable": "logreg",
            "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}}}
    study = load_study(base).settings.flat()
    assert (study["output_warp"], study["kernel"], study["noise_floor"], study["believe_past"],
            study["finish_by_deadline"], study["startup_until_result"],
            study["n_initial"]) == ("auto", "matern52", 1e-3, 3, True, True, "lean")
    assert load_study({**base, "optimizer": {"n_initial": "auto"}}).settings.n_initial == "auto"
    assert load_study({**base, "optimizer": {"output_warp": "none"}}).settings.output_warp == "none"
    asked = load_study({**base, "optimizer": {"research": {"believe_past": None}}}).settings
    assert asked.research.censored.believe_past is None
    bare = Settings().flat()
    assert (bare["output_warp"], bare["kernel"], bare["noise_floor"], bare["believe_past"],
            bare["finish_by_deadline"], bare["startup_until_result"],
            bare["n_initial"]) == ("none", "se", 1e-6, None, False, False, "auto")
    line = {"x": {"type": "float", "low": 0, "high": 1}}
    searched = TunerSearch(metric="loss", mode="min", space=line).optimizer.settings.flat()
    assert (searched["output_warp"], searched["kernel"], searched["noise_floor"],
            searched["believe_past"], searched["finish_by_deadline"],
            searched["startup_until_result"], searched["n_initial"]) == (
                "auto", "matern52", 1e-3, 3, True, True, "lean")
    told = TunerSearch(metric="loss", mode="min", space=line, output_warp="none")
    assert told.optimizer.settings.output_warp == "none"


def test_a_study_with_a_context_keeps_the_design_of_two_points_per_parameter():
    """The later contexts' warm starts use the first one's spread (docs/research/notes/method.md "A
    lean start-up design in a study"); a study without a context starts lean, and a config that
    names the design wins."""
    from tuner.integrations.ray.tune_search import TunerSearch

    base = {"study": "ctx", "trainable": "logreg",
            "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}}}
    assert load_study({**base, "context": {"rows": 100}}).settings.n_initial == "auto"
    assert load_study(base).settings.n_initial == "lean"
    asked = {**base, "context": {"rows": 100}, "optimizer": {"n_initial": "lean"}}
    assert load_study(asked).settings.n_initial == "lean"
    line = {"x": {"type": "float", "low": 0, "high": 1}}
    searched = TunerSearch(metric="loss", mode="min", space=line,
                           context_space={"rows": {"type": "float", "low": 1, "high": 1000}},
                           context={"rows": 100})
    assert searched.optimizer.settings.n_initial == "auto"


def test_thompson_sampling_with_a_context_starts_without_the_rank_warp():
    """A study default that depends on the study: TS with a context
    (docs/research/notes/contextual.md "Thompson sampling and the rank warp"); UCB with a context
    and TS without one keep the warp, and a config or TunerSearch argument that names the setting
    wins."""
    from tuner.integrations.ray.tune_search import TunerSearch

    base = {"study": "ts", "trainable": "logreg",
            "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}}}
    ts = {"optimizer": {"algorithm": "gp-ts-sdf"}}
    assert load_study({**base, **ts, "context": {"rows": 100}}).settings.output_warp == "none"
    assert load_study({**base, **ts}).settings.output_warp == "auto"
    assert load_study({**base, "context": {"rows": 100}}).settings.output_warp == "auto"
    told = {"optimizer": {"algorithm": "gp-ts-sdf", "output_warp": "copula"}}
    assert load_study({**base, **told, "context": {"rows": 100}}).settings.output_warp == "copula"
    other = load_study({**base, **ts, "context": {"rows": 100}}).settings
    assert (other.kernel, other.research.model.noise_floor) == ("matern52", 1e-3)
    line = {"x": {"type": "float", "low": 0, "high": 1}}
    searched = TunerSearch(metric="loss", mode="min", space=line, algorithm="gp-ts-sdf",
                           context_space={"rows": {"type": "float", "low": 1, "high": 1000}},
                           context={"rows": 100})
    assert searched.optimizer.settings.output_warp == "none"
    assert TunerSearch(metric="loss", mode="min", space=line,
                       algorithm="gp-ts-sdf").optimizer.settings.output_warp == "auto"


def test_numbers_written_as_1e_minus_3_are_numbers_in_a_study_file(tmp_path):
    """PyYAML reads YAML 1.1, where 1e-3 (no dot) is the string '1e-3'; a study file takes it
    as the number users mean, in the space and the optimizer section alike."""
    path = tmp_path / "study.yaml"
    path.write_text("study: s\ntrainable: logreg\n"
                    "space: {lr: {type: float, low: 1e-6, high: 1, log: true}}\n"
                    "optimizer: {research: {noise_floor: 1e-3, lengthscale: 2E-1}}\n")
    cfg = load_study(path)
    assert cfg.space["lr"]["low"] == 1e-6
    model = cfg.settings.research.model
    assert (model.noise_floor, model.lengthscale) == (1e-3, 0.2)


def test_a_study_stops_a_run_half_past_its_wall_time_budget_unless_told_otherwise():
    """``budget.stop_margin: auto``: a run past 1.5 x a wall-time limit is stopped (its result
    could no longer count) and enters the objective's GP at the posterior mean; a CPU-time
    budget is known only when a run ends, so nothing is stopped; ``null`` never stops."""
    base = {"study": "stop", "trainable": "logreg",
            "space": {"C": {"type": "float", "low": 0.01, "high": 10.0}}}
    wall = load_study({**base, "budget": {"limit": 10.0, "metric": "runtime"}})
    assert (wall.budget.stop_margin, wall.budget.stop_at) == (0.5, 15.0)
    assert wall.settings.stop_margin == 0.5
    assert wall.settings.research.censored.stopped_objective == "mean"
    cpu = load_study({**base, "budget": {"limit": 10.0, "metric": "cpu_time"}})
    assert (cpu.budget.stop_margin, cpu.budget.stop_at, cpu.settings.stop_margin) == (
        None, None, None)
    never = load_study({**base, "budget": {"limit": 10.0, "metric": "runtime",
                                           "stop_margin": None}})
    assert (never.budget.stop_at, never.settings.stop_margin) == (None, None)
    told = load_study({**base, "budget": {"limit": 10.0, "metric": "runtime", "stop_margin": 1}})
    assert told.budget.stop_at == 20.0


def test_a_study_of_categories_only_picks_its_runs_by_log_ei_and_says_so():
    """``algorithm: auto`` (a study's default): log EI on a space of categoricals only with at
    most 4 runs at once, GP-UCB with more, with a float among the parameters, with a budget, or
    when the config names an algorithm; the banner and the tracked params name the algorithm
    that runs, not ``auto``."""
    from tuner.study.report import banner
    from tuner.study.tracking import study_params

    cats = {"act": ["relu", "tanh"], "width": {"type": "categorical", "choices": [16, 32, 64]}}
    base = {"study": "cats", "trainable": "logreg"}
    only = load_study({**base, "space": cats})
    assert only.settings.algorithm == "auto" and only.algorithm == "gp-ei-sdf"
    assert ", gp-ei-sdf, " in banner(only, "local Ray", [])
    assert study_params(only)["algorithm"] == "gp-ei-sdf"
    mixed = load_study({**base, "space": {**cats, "C": {"type": "float", "low": 0.1, "high": 1}}})
    assert mixed.algorithm == "gp-ucb-sdf"
    budgeted = load_study({**base, "space": cats, "budget": {"limit": 5.0, "metric": "runtime"}})
    assert budgeted.algorithm == "gp-ucb-sdf"
    named = load_study({**base, "space": cats, "optimizer": {"algorithm": "gp-ts-sdf"}})
    assert named.algorithm == "gp-ts-sdf"
    wide = load_study({**base, "space": cats, "run": {"max_concurrent": 8}})
    assert wide.algorithm == "gp-ucb-sdf"
