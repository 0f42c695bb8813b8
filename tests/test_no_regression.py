"""The no-regression check (tuner.bench.no_regression): a candidate default against today's,
paired by seed, flags the (problem, W, horizon) where it is behind beyond the seeds' spread."""

import pytest

from tuner.bench import no_regression as nr


def rows(problem, default, candidate, h="best_1"):
    out = []
    for method, scores in ((nr.DEFAULT, default), (nr.CANDIDATE, candidate)):
        for seed, v in enumerate(scores):
            r = {"problem": problem, "workers": 4, "method": method, "seed": seed,
                 "best_0.25": 0.5, "best_0.5": 0.5, "best_1": 0.5}
            r[h] = v
            out.append(r)
    return out


def test_the_check_flags_a_candidate_behind_on_every_seed_and_nothing_within_the_spread():
    base = [0.80, 0.82, 0.85, 0.81, 0.90, 0.84, 0.83]
    lower = [v - 0.01 for v in base]
    mixed = [v + d for v, d in zip(base, (-0.01, 0.01, -0.02, 0.02, -0.01, 0.01, 0.0))]
    lines, worse, better = nr.check(rows("a", base, lower) + rows("b", base, mixed)
                                    + rows("c", lower, base) + rows("d", base, base))
    assert worse == [("a", 4, "best_1")]
    assert better == [("c", 4, "best_1")]
    assert "worse beyond the seeds' spread: 1 of 12" in lines[1]
    # a run with nothing feasible (NaN) counts as the worst score, never as a tie
    nan = rows("e", base, [float("nan")] * len(base))
    assert nr.check(nan)[1] == [("e", 4, "best_1")]
    # five seeds cannot reject at 0.05 (two-sided exact test): never behind
    assert nr.check(rows("f", base[:5], lower[:5]))[1] == []


def test_the_command_runs_both_defaults_on_the_same_seeds_and_exits_1_when_behind(tmp_path,
                                                                                   capsys):
    """Random search as the candidate, on a harness problem and a curve problem, 6 seeds: it is
    behind at H on both; the rows resume and the report reads them back."""
    out = tmp_path / "check"
    argv = ["--candidate", '{"algorithm": "random"}', "--out", str(out), "--problems",
            "branin", "--curve-problems", "crossing", "--family-instances", "0", "--workers", "4",
            "--seeds", "6", "--procs", "2"]
    assert nr.main(argv) == 1
    got = nr.read(out / "runs.csv")
    assert len(got) == 24 and {r["method"] for r in got} == {nr.DEFAULT, nr.CANDIDATE}
    text = (out / "check.md").read_text()
    assert "worse: branin, W = 4, best_1" in text and "worse: crossing, W = 4, best_1" in text
    assert nr.main(argv) == 1 and len(nr.read(out / "runs.csv")) == 24   # nothing run again
    assert "0 runs to go" in capsys.readouterr().out
    assert nr.main(["--report", str(out)]) == 1


def test_a_candidate_that_is_not_a_setting_is_refused_naming_it(tmp_path, capsys):
    with pytest.raises(SystemExit):
        nr.main(["--candidate", '{"kernal": "se"}', "--out", str(tmp_path / "x")])
    assert "did you mean 'kernel'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_candidate_that_needs_a_run_time_budget_is_refused_on_a_problem_without_one(tmp_path,
                                                                                      capsys):
    args = ["--candidate", '{"stop_margin": 0.5}', "--curve-problems", "--family-instances", "0"]
    with pytest.raises(SystemExit):
        nr.main([*args, "--out", str(tmp_path / "x"), "--problems", "hpo-mixed-budget", "branin"])
    err = capsys.readouterr().err
    assert "stop_margin needs a run-time constraint" in err and "(on branin)" in err
    assert not (tmp_path / "x").exists()
    assert nr.invalid({"stop_margin": 0.5}, ["hpo-mixed-budget"]) is None
