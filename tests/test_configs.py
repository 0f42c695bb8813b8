"""Every shipped study config loads, and configs/cnn.yaml is the built-in default study."""

from pathlib import Path

import pytest

from tuner.app.simulation import load_simulation
from tuner.study.config import DEFAULT_STUDY, load_study

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


@pytest.mark.parametrize("path", sorted(p for p in CONFIGS.glob("*.yaml") if "simulation" not in p.read_text()),
                         ids=lambda p: p.name)
def test_shipped_run_configs_load(path):
    cfg = load_study(path)
    assert cfg.run.trials > 0 and cfg.space


def test_shipped_simulation_config_loads():
    assert load_simulation(CONFIGS / "synthetic.yaml").trials > 0


def test_the_default_study_is_configs_cnn_yaml():
    assert load_study(DEFAULT_STUDY).resolved() == load_study(CONFIGS / "cnn.yaml").resolved()
