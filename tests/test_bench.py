"""Smoke test of the side-by-side benchmark (tuner.bench.compare) with real peers."""

from __future__ import annotations

import csv
import importlib.util
import math

import numpy as np
import pytest

pytest.importorskip("optuna")

from tuner.bench import compare  # noqa: E402
from tuner.bench.peers import OptunaAdapter, SyneTuneAdapter, make_method  # noqa: E402
from tuner.bench.problems import get_problem  # noqa: E402
from tuner.loop.simulator import RunTime, simulate  # noqa: E402

W, N = 4, 24


def _run(opt, name: str, n: int = N, progress=None):
    p = get_problem(name)
    return simulate(opt, p, RunTime(p.mean_runtime, p.cv), n_trials=n, workers=W,
                    noise_std=p.noise_std, seed=3, progress=progress)


def _check_async(adapter, res) -> None:
    """Results told in arrival order at their finish times; suggestions made while the other
    workers' trials were still pending."""
    tells = [e for e in adapter.events if e[0] == "tell"]
    times = [e[2] for e in tells]
    assert times == sorted(times)
    assert all(math.isclose(t, res.finish[tid]) for _, tid, t in tells)
    asks = [e for e in adapter.events if e[0] == "ask"]
    assert len(asks) == N
    assert [e[3] for e in asks[:W]] == list(range(W))          # the pool fills up
    assert all(e[3] == W - 1 for e in asks[W:])               # one worker freed, W - 1 pending
    assert len(tells) == N and not adapter.pending              # every started trial reported


@pytest.mark.parametrize("sampler", ["tpe", "gp"])
def test_optuna_adapter_keeps_running_trials_pending(sampler):
    import optuna

    opt = OptunaAdapter(get_problem("gardner"), sampler, seed=0)
    seen = []

    def running_in_optuna(n_started):
        running = [t.number for t in opt.study.get_trials(deepcopy=False)
                   if t.state == optuna.trial.TrialState.RUNNING]
        seen.append((sorted(running), sorted(opt.pending)))

    res = _run(opt, "gardner", progress=running_in_optuna)
    _check_async(opt, res)
    trials = opt.study.get_trials(deepcopy=False)
    assert len(trials) == N
    assert len(seen) == N and all(a == b and len(a) >= 1 for a, b in seen)
    assert max(len(a) for a, _ in seen) == W
    done = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    # the constraint reached Optuna: constraints_func read the value set before study.tell
    assert all(t.constraints and "constraint" in t.user_attrs for t in done)
    for t in done:
        assert t.params == res.configs[t.number]


def test_syne_tune_adapter_fantasizes_pending_trials():
    if not (importlib.util.find_spec("syne_tune") and importlib.util.find_spec("botorch")):
        pytest.skip("syne-tune / botorch not installed (the bench extra)")
    opt = SyneTuneAdapter(get_problem("branin"), seed=0)
    seen = []
    res = _run(opt, "branin", n=12, progress=lambda n: seen.append(
        (sorted(opt.scheduler.base_scheduler.searcher.pending_trials), sorted(opt.pending))))
    searcher = opt.scheduler.base_scheduler.searcher
    assert len(searcher.trial_configs) == 12
    # what qLogEI fantasizes
    assert all(a == b for a, b in seen) and max(len(a) for a, _ in seen) == W
    assert len(res.start) == 12


def test_syne_tune_adapter_repeats_a_run_with_the_same_seed():
    """Its start-up configurations come from numpy's global generator (Syne Tune 0.16), which
    the adapter seeds: what ran before in the process does not change a run."""
    if not (importlib.util.find_spec("syne_tune") and importlib.util.find_spec("botorch")):
        pytest.skip("syne-tune / botorch not installed (the bench extra)")
    runs = []
    for draws in (0, 5):
        np.random.rand(draws)                       # other work in the process before the run
        runs.append(_run(SyneTuneAdapter(get_problem("branin"), seed=0), "branin", n=8).configs)
    assert runs[0] == runs[1]


def test_project_default_through_the_same_loop():
    opt = make_method("tuner", get_problem("gardner"), seed=0)
    res = _run(opt, "gardner")
    assert len(opt.trials) == N and not opt.running and res.completed.all()
    assert res.optimizer is opt


@pytest.mark.slow
def test_quick_benchmark_end_to_end(tmp_path):
    out = compare.main(["--quick", "--out", str(tmp_path), "--seeds", "1",
                        "--problems", "branin", "gardner", "hpo-mixed-budget",
                        "--methods", "tuner", "optuna-tpe", "random"])
    with (out / "runs.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert set(compare.COLUMNS) <= set(rows[0])
    assert {(r["problem"], r["method"]) for r in rows} == {
        (p, m)
        for p in ("branin", "gardner", "hpo-mixed-budget")
        for m in ("tuner", "optuna-tpe", "random")
    }
    for r in rows:
        f_opt, best, first = float(r["f_opt"]), float(r["best_1"]), float(r["first_score"])
        assert int(r["trials"]) >= 4 * int(r["workers"]) and int(r["completed"]) <= int(r["trials"])
        assert best <= f_opt + 1e-9
        halves = [float(r[k]) for k in ("best_0.25", "best_0.5", "best_1")]
        assert np.all(np.diff([v for v in halves if not math.isnan(v)]) >= 0)   # best so far
        if get_problem(r["problem"]).constraint is None:
            assert best >= first
    tuner = {r["problem"]: r for r in rows if r["method"] == "tuner"}
    assert float(tuner["branin"]["best_1"]) > float(tuner["branin"]["first_score"])
    assert float(tuner["branin"]["best_1"]) > -5.0          # f* = -0.398; random start ~ -50
    budget = [r for r in rows if r["problem"] == "hpo-mixed-budget"]
    assert all(int(r["infeasible_trials"]) > 0 for r in budget if r["method"] == "random")
    summary = (out / "summary.md").read_text()
    assert "## Headline, W = 4" in summary and "optuna-tpe" in summary
    assert (out / "branin.png").stat().st_size > 0


def test_lookup_problems_follow_the_table_interface(monkeypatch, capsys):
    """The trainables' tables (tuner/bench/lookup.py, built elsewhere) are read through
    load_table / available only; absent tables are skipped with a note."""
    import sys
    import types

    from tuner.bench.problems import PROBLEMS

    class Table:
        space = {"C": {"type": "float", "low": 1e-3, "high": 1e3, "log": True}}
        X = np.array([[1e-3], [1.0], [1e3]])
        accuracy = np.array([0.5, 0.9, 0.7])
        train_time = np.array([1.0, 2.0, 8.0])

        def nearest(self, config):
            return int(np.argmin(np.abs(np.log10(self.X[:, 0]) - np.log10(config["C"]))))

    fake = types.ModuleType("tuner.bench.lookup")
    fake.load_table = lambda name: Table()
    fake.available = lambda name: name == "svm"
    monkeypatch.setitem(sys.modules, "tuner.bench.lookup", fake)
    import tuner.bench

    monkeypatch.setattr(tuner.bench, "lookup", fake, raising=False)
    p = PROBLEMS["lookup-svm"]()
    assert p.f_opt == 0.9 and p.f({"C": 2.0}) == 0.9 and p.mean_runtime({"C": 500.0}) == 8.0
    assert compare.usable_problems(["lookup-svm", "lookup-cnn"]) == ["lookup-svm"]
    assert "skipping lookup-cnn" in capsys.readouterr().out


def test_paired_table_counts_the_seeds_a_variant_beat_or_lost_to_the_reference(tmp_path):
    """tuner.bench.paired reads runs.csv files as one and compares each variant with the
    reference seed by seed (the harness gives both the same run times)."""
    from tuner.bench import paired

    for method in ("tuner", "default-matern"):
        compare.main(["--out", str(tmp_path / method), "--seeds", "3", "--workers", "4",
                      "--problems", "branin", "--methods", method])
    files = [str(tmp_path / m / "runs.csv") for m in ("tuner", "default-matern")]
    rows = {m: {int(r["seed"]): float(r["best_1"]) for r in csv.DictReader(open(f))}
            for m, f in zip(("tuner", "default-matern"), files)}
    won = sum(rows["default-matern"][s] > rows["tuner"][s] for s in range(3))
    lost = sum(rows["default-matern"][s] < rows["tuner"][s] for s in range(3))
    text = paired.main([*files, "--base", "tuner", "--out", str(tmp_path / "paired.md")])
    line = next(ln for ln in text.splitlines() if ln.startswith("| branin | 4 | H |"))
    assert f"({won}/{lost} of 3)" in line
    assert (tmp_path / "paired.md").read_text().strip() == text.strip()
    with pytest.raises(SystemExit, match="--base 'nope'"):
        paired.main([*files, "--base", "nope"])
