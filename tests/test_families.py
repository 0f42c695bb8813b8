"""Problem families (tuner.bench.families): instances drawn from a seed, the same every time,
a fixed split into tuning and held-out instances, and the structure each family promises."""

import numpy as np
import pytest

from tuner.bench import families as F
from tuner.bench.compare import one_run
from tuner.bench.problems import get_problem


def values(p, n=64):
    return [p.f(c) for c in F.sample_configs(p.space, n)]


def test_an_instance_is_the_same_problem_every_time_and_each_seed_another():
    a, b = F.instance(F.name("mixed", 3)), F.instance(F.name("mixed", 3))
    assert a.space == b.space and values(a) == values(b)
    others = [F.instance(F.name("mixed", s)) for s in (4, 1003)]
    assert all(o.space != a.space or values(o) != values(a) for o in others)
    assert get_problem("family-rough-1000").name == "family-rough-1000"


def test_the_split_is_fixed_and_names_what_is_allowed():
    assert not set(F.TUNING) & set(F.HELD_OUT)
    assert F.instances("budget", "held-out", 2) == ["family-budget-1000", "family-budget-1001"]
    with pytest.raises(ValueError, match="'tuning' or 'held-out'"):
        F.instances("budget", "test", 2)
    with pytest.raises(ValueError, match="known: .*'categorical'"):
        F.instances("nas", "tuning", 2)
    with pytest.raises(ValueError, match="family one of"):
        get_problem("family-nas-3")
    with pytest.raises(ValueError, match="family-<family>-<seed>"):
        get_problem("no-such-problem")


def test_mixed_instances_span_the_kinds_and_sizes_the_family_promises():
    spaces = [F.instance(F.name("mixed", s)).space for s in range(40)]
    dims = [len(s) for s in spaces]
    assert min(dims) <= 4 and max(dims) >= 11 and all(3 <= d <= 12 for d in dims)
    kinds = {("log" if p.get("log") else p["type"]) for s in spaces for p in s.values()}
    assert kinds == {"float", "log", "int", "categorical"}
    wide = [len(p["choices"]) for s in spaces for p in s.values() if p["type"] == "categorical"]
    assert max(wide) >= 8 and sum(k >= 5 for k in wide) >= len(wide) / 3


def test_a_categorical_instance_is_all_categorical_with_its_optimum_enumerated():
    for s in range(5):
        p = F.instance(F.name("categorical", s))
        assert {q["type"] for q in p.space.values()} == {"categorical"}
        if p.f_opt is not None:
            assert p.f_opt >= max(values(p, 512)) - 1e-12


def test_a_budget_instance_is_met_by_5_to_60_percent_of_the_space():
    shares = []
    for s in range(12):
        p = F.instance(F.name("budget", s))
        assert p.budget is not None
        shares.append(np.mean([p.feasible(c) for c in F.sample_configs(p.space, 2048)]))
    assert all(0.04 <= x <= 0.62 for x in shares) and max(shares) - min(shares) > 0.2


def test_noise_and_stragglers_vary_across_instances():
    noise = [F.instance(F.name("noisy", s)).noise_std for s in range(20)]
    assert min(noise) == 0.0 and max(noise) > 0.3 * F.SPREAD
    cv = [F.instance(F.name("stragglers", s)).cv for s in range(20)]
    assert min(cv) >= 0.6 and max(cv) > 1.2


def test_the_harness_runs_a_family_instance_as_any_problem():
    row = one_run("family-budget-1", 4, "random", 0)
    assert row["trials"] > 10 and row["best_1"] >= row["best_0.25"]
    assert row["infeasible_trials"] > 0      # random search does not know the budget


def test_the_family_report_judges_a_method_over_the_instances(tmp_path):
    """Seven instances: a method ahead of ours on every one is named; one behind on every one
    is not; the scores are normalized per instance (0: a random configuration's median)."""
    import csv

    from tuner.bench.family_report import normalizer, report

    names = F.instances("categorical", "tuning", 7)
    path = tmp_path / "runs.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["problem", "workers", "method", "seed", "best_0.25",
                                           "best_0.5", "best_1"])
        w.writeheader()
        for name in names:
            med, top = normalizer(name)
            for seed in range(3):
                for method, share in (("study", 0.6), ("ahead", 0.8), ("behind", 0.3)):
                    v = med + share * (top - med) + 0.001 * seed
                    w.writerow({"problem": name, "workers": 4, "method": method, "seed": seed,
                                "best_0.25": v, "best_0.5": v, "best_1": v})
    text, ok, total = report([path], "study")
    assert (ok, total) == (0, 3)
    assert "H: behind ahead" in text and "behind behind" not in text
    assert "| study | 0.60" in text and "(7 instances)" in text
