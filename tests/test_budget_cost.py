"""What the budget cost (the study's summary, best.json, tuner show): the best trial over the
budget beside the best within it, with the ratio of their run times."""

from tuner.core.optimizer import Optimizer
from tuner.study.config import load_study
from tuner.study.progress import rank_finished
from tuner.study.report import best_over_budget, over_line
from tuner.study.study import Session, Study


def study_with(results):
    """A study of the SVM with a 1 s budget whose trials ended with (C, accuracy, run time)."""
    cfg = load_study({"trainable": "svm", "budget": {"limit": 1.0}})
    opt = Optimizer(cfg.space, cfg.settings, clock=lambda: 0.0)
    for C, acc, runtime in results:
        s = opt.suggest(config={"C": C, "gamma": 0.01})
        opt.tell(s.trial_id, acc, {"runtime": runtime})
    study = Study(cfg, opt, Session(), lambda: 0.0, 0.0)
    rows = [study.row(tid) for tid in study.ended()]
    return study, rank_finished(rows, "accuracy", "max")


def test_the_best_over_the_budget_is_shown_with_what_it_cost():
    study, finished = study_with([(1.0, 0.90, 0.5), (10.0, 0.95, 2.0), (0.1, 0.80, 3.0)])
    over = best_over_budget(study, finished)
    assert over["trial"] == 1 and over["accuracy"] == 0.95 and over["runtime"] == 2.0
    assert over["best_within"] == {"trial": 0, "accuracy": 0.90, "runtime": 0.5}
    assert over["runtime_ratio"] == 4.0 and over["config"]["C"] == 10.0
    line = over_line(study, over)
    assert line.startswith("best over the budget: trial 1, accuracy 0.95 (best within: 0.9)")
    assert "runtime 2 s = 4 x the best within's 0.5 s" in line


def test_nothing_is_shown_when_the_budget_cost_nothing():
    study, finished = study_with([(1.0, 0.90, 0.5), (10.0, 0.85, 2.0)])      # over, but worse
    assert best_over_budget(study, finished) is None
    study, finished = study_with([(1.0, 0.90, 0.5)])                          # none over
    assert best_over_budget(study, finished) is None
