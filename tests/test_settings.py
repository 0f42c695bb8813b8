"""The optimizer's settings as users give them: the public settings by name, the research and
paper switches under ``research`` (by name or by group), ``PAPER_EXACT``, and states and study
files saved before the switches were grouped."""

import json

import pytest

from tuner import PAPER_EXACT, Optimizer, Settings
from tuner.core.research import GROUP_OF, GROUPS
from tuner.core.settings import PUBLIC
from tuner.study.config import load_study
from tuner.study.schema import ConfigError

LINE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}


def test_a_research_switch_among_the_public_settings_says_where_it_goes():
    with pytest.raises(ValueError, match=r"\['censoring'\] is a research switch: give it under "
                                         r"research, e.g. research: \{censoring: \.\.\.\}"):
        Optimizer(LINE, censoring="hard")
    with pytest.raises(ConfigError, match=r"optimizer: \['believe_past'\] is a research switch"):
        load_study({"trainable": "svm", "optimizer": {"believe_past": 5}})
    with pytest.raises(ValueError, match=r"research: unknown key\(s\) \['censorng'\]; did you "
                                         r"mean 'censoring'"):
        Optimizer(LINE, research={"censorng": "hard"})
    with pytest.raises(ValueError, match=r"research.censoring: must be one of \['hard', 'soft'\]"):
        Optimizer(LINE, research={"censoring": "sfot"})


def test_a_switch_by_name_or_by_group_is_the_same_setting():
    by_name = Settings(research={"censoring": "hard", "n_starts": 7})
    by_group = Settings(research={"censored": {"censoring": "hard"}, "search": {"n_starts": 7}})
    assert by_name == by_group
    assert by_name.research.censored.censoring == "hard" and by_name.research.search.n_starts == 7
    assert Settings.from_dict(by_name.to_dict()) == by_name            # the saved form reads back
    assert set(by_name.to_dict()["research"]) == set(GROUPS)
    assert set(GROUP_OF).isdisjoint(PUBLIC)                           # a name says its place


def test_paper_exact_is_the_papers_rules_however_it_is_given():
    s = Settings.from_dict(PAPER_EXACT)
    assert Optimizer(LINE, **PAPER_EXACT).settings == Settings(**PAPER_EXACT) == s
    assert (s.research.censored.censoring, s.kernel, s.constraint_handler) == ("hard", "se", "rpol")
    # a variant names a switch at the top: it wins over PAPER_EXACT's research mapping
    variant = Settings.from_dict({**PAPER_EXACT, "censoring": "soft", "nu_terms": "window"})
    assert variant.research.censored.censoring == "soft"
    assert variant.research.exploration.nu_terms == "window"
    assert variant.research.model.context_kernel == "product"         # the rest stays the paper's


def test_overrides_go_over_the_settings_given_switch_by_switch():
    base = Settings(kernel="matern52", research={"believe_past": 3, "n_local": 64})
    opt = Optimizer(LINE, base, seed=4, research={"n_local": 16})
    assert (opt.settings.kernel, opt.settings.seed) == ("matern52", 4)
    research = opt.settings.research
    assert (research.censored.believe_past, research.search.n_local) == (3, 16)


def test_a_state_saved_with_flat_settings_loads_with_the_same_suggestions():
    opt = Optimizer(LINE, seed=2, research={"censor_noise": 0.05})
    for _ in range(6):
        s = opt.suggest()
        opt.tell(s.trial_id, s.config["x"])
    state = json.loads(json.dumps(opt.state_dict()))
    flat = {**{k: v for k, v in state["settings"].items() if k != "research"},
            **opt.settings.research.flat(), "warp_margin": 0.1}   # as written before the groups
    old = {**state, "settings": flat}
    again = Optimizer.from_state(old)
    assert again.settings == opt.settings
    assert again.suggest().config == Optimizer.from_state(state).suggest().config


def test_a_study_file_takes_research_switches_under_research():
    cfg = load_study({"trainable": "svm", "optimizer": {"kernel": "se",
                                                        "research": {"believe_past": 7}}})
    assert cfg.settings.kernel == "se" and cfg.settings.research.censored.believe_past == 7
    # a study's other defaults stay (the bare Optimizer's differ)
    assert cfg.settings.research.model.noise_floor == 1e-3
    assert cfg.settings.output_warp == "auto"
