"""The one study loop (tuner.loop.loop.StudyLoop) on the simulated backend: its stop rules,
its outcomes, and that it waits exactly until the next event.  The same loop on Ray:
tests/test_run.py and test_loop_on_ray below."""

import math
import sys
import time

import numpy as np
import pytest

from conftest import optimizer
from tuner import Optimizer
from tuner.core.trial import Status
from tuner.loop.loop import Limits, LoopCallback, Result, StudyLoop
from tuner.loop.simulator import Fixed, RunTime, SimulatedBackend, simulate

LINE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
BUDGET = {"metric": "runtime", "limit": 0.5, "type": "budget", "runtime": True}


class Recorder(LoopCallback):
    def __init__(self):
        self.outcomes = {}
        self.launched = []

    def on_launch(self, trial_id, config):
        self.launched.append(trial_id)

    def on_end(self, outcome):
        self.outcomes[outcome.trial_id] = outcome


class CountingBackend(SimulatedBackend):
    """The simulated backend, counting the loop's waits."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.waits = []

    def wait(self, until):
        self.waits.append(until)
        return super().wait(until)


def run(objective, durations, limits, **opt_kw):
    """A loop over a simulated backend whose k-th trial takes durations[k] seconds."""
    it = iter(durations)
    backend = CountingBackend(objective, lambda c, rng: next(it), np.random.default_rng(0))
    opt = optimizer(LINE, algorithm="random", seed=0, clock=backend.clock, **opt_kw)
    rec = Recorder()
    loop = StudyLoop(opt, backend, limits, callbacks=[rec])
    assert loop.run() is True
    return opt, backend, rec, loop


def test_budget_stop_fires_at_limit_times_one_plus_margin_exactly():
    opt, backend, rec, _ = run(lambda c: 1.0, [5.0, 0.2, 0.7, 0.75], Limits(4, slots=2),
                               constraints=[BUDGET], stop_margin=0.5)
    out = rec.outcomes
    assert out[0].status == Status.TIMED_OUT and out[0].runtime == 0.75      # 0.5 x 1.5, not 5 s
    assert "passed the budget" in out[0].reason
    assert out[1].status == Status.FINISHED and out[1].runtime == 0.2
    assert out[2].status == Status.FINISHED and out[2].runtime == pytest.approx(0.7)
    # a result that arrives at its stop time is kept, not stopped
    assert out[3].status == Status.FINISHED and out[3].runtime == pytest.approx(0.75)
    assert opt.trials[0].status == Status.TIMED_OUT and opt.trials[0].metrics["runtime"] == 0.75
    # the loop woke at the stop time itself, not at a poll
    assert 0.75 in backend.waits


def test_trial_timeout_stops_a_trial_and_a_new_one_takes_its_slot():
    _, _, rec, _ = run(lambda c: 1.0, [10.0, 1.0, 1.0], Limits(3, slots=1, trial_timeout=2.0))
    out = rec.outcomes
    assert out[0].status == Status.TIMED_OUT and out[0].runtime == 2.0
    assert "run.trial_timeout = 2" in out[0].reason
    assert out[1].start == 2.0 and out[2].start == 3.0
    assert [o.status for o in out.values()].count(Status.FINISHED) == 2


def test_deadline_kills_running_trials_and_starts_nothing_after_it():
    limits = Limits(100, slots=2, deadline=5.0, deadline_reason="reached the limit")
    opt, backend, rec, loop = run(lambda c: 1.0, [2.0] * 100, limits)
    assert loop.started == 6                           # starts at 0, 0, 2, 2, 4, 4
    killed = [o for o in rec.outcomes.values() if o.status == Status.KILLED]
    assert len(killed) == 2 and all(
        o.end == 5.0 and o.reason == "reached the limit" for o in killed
    )
    assert all(tr.status != Status.RUNNING for tr in opt.trials)
    assert backend.clock() == 5.0


def test_the_loop_waits_once_per_event_and_no_more():
    """Three trials on one slot (1 s each) and a progress wake-up every 10 s: one wait per
    result; nothing in between."""
    _, backend, rec, _ = run(lambda c: 1.0, [1.0, 1.0, 1.0], Limits(3, slots=1))
    assert backend.waits == [None, None, None] and len(rec.outcomes) == 3


@pytest.mark.parametrize("value, reason", [(math.nan, "non-finite objective"),
                                           (math.inf, "non-finite objective")])
def test_a_non_finite_objective_fails_that_trial_and_the_study_goes_on(value, reason):
    values = iter([value, 0.3, 0.4])
    opt, _, rec, _ = run(lambda c: next(values), [1.0, 1.0, 1.0], Limits(3, slots=1))
    assert rec.outcomes[0].status == Status.FAILED and reason in rec.outcomes[0].reason
    assert [tr.status for tr in opt.trials] == [Status.FAILED, Status.FINISHED, Status.FINISHED]


def test_a_missing_objective_metric_is_a_failure_with_its_cause():
    class Backend(SimulatedBackend):
        def wait(self, until):
            return [Result(r.trial_id, r.end, {"loss": 1.0}) for r in super().wait(until)]

    backend = Backend(lambda c: 1.0, Fixed(1.0), np.random.default_rng(0))
    opt = Optimizer(LINE, algorithm="random", seed=0, clock=backend.clock)
    rec = Recorder()
    StudyLoop(opt, backend, Limits(2, slots=1), metric="accuracy", callbacks=[rec]).run()
    assert all(o.status == Status.FAILED for o in rec.outcomes.values())
    assert "reported no 'accuracy'" in rec.outcomes[0].reason and "loss" in rec.outcomes[0].reason


def test_a_stop_request_abandons_the_running_trials():
    """A Ctrl-C during a wait (the Ray backend returns from it at once): the loop stops, the
    running trials are abandoned and stay RUNNING for a resume."""
    class Interrupted(SimulatedBackend):
        requested = False

        def wait(self, until):
            if len(self.start) >= 6:
                self.requested = True
                return []
            return super().wait(until)

    backend = Interrupted(lambda c: 1.0, Fixed(1.0), np.random.default_rng(0))
    opt = Optimizer(LINE, algorithm="random", seed=0, clock=backend.clock)
    rec = Recorder()
    loop = StudyLoop(opt, backend, Limits(10, slots=2), callbacks=[rec],
                     should_stop=lambda: backend.requested)
    assert loop.run() is False
    assert len(rec.outcomes) == 4 and sorted(loop.running) == [4, 5]
    assert [tr.trial_id for tr in opt.running] == [4, 5]


def test_paper_setting_starts_one_trial_per_unit_of_time():
    """workers=None (paper 001 §6): a start at t = 0, 1, 2, ...; a delay of d reports just
    before query t + d + 1."""
    opt = Optimizer(LINE, algorithm="random", seed=0)
    res = simulate(opt, lambda c: c["x"], Fixed(2), n_trials=6)
    assert res.start.tolist() == [0, 1, 2, 3, 4, 5]
    assert res.finish.tolist() == [2.5, 3.5, 4.5, 5.5, 6.5, 7.5]
    assert [tr.finish_index for tr in opt.trials] == [3, 4, 5, 6, 6, 6]
    assert res.completed.all()


def test_simulate_with_a_time_limit_kills_what_runs_at_the_limit():
    opt = Optimizer(LINE, algorithm="random", seed=0)
    res = simulate(opt, lambda c: c["x"], RunTime(lambda c: 1.0, cv=0.3), n_trials=10 ** 6,
                   workers=3, seed=1, time_limit=10.0)
    assert (res.start < 10.0).all()
    killed = res.status == Status.KILLED
    assert killed.sum() == 3 and (res.finish[killed] == 10.0).all()
    assert (res.completed == (res.status == Status.FINISHED)).all()


def test_a_non_finite_constraint_value_fails_the_trial_and_the_multiplier_stays_finite():
    import json

    costs = iter([math.nan] + [0.5] * 9)
    backend = SimulatedBackend(lambda c: (c["x"], {"cost": next(costs)}), Fixed(1.0),
                               np.random.default_rng(0))
    opt = Optimizer(LINE, algorithm="gp-ucb", seed=0, clock=backend.clock, n_initial=2,
                    constraints=[{"metric": "cost", "limit": 1.0, "type": "upper"}],
                    constraint_handler="rpol", n_candidates=64, research={"n_local": 8})
    rec = Recorder()
    assert StudyLoop(opt, backend, Limits(10, slots=1), callbacks=[rec]).run()
    assert rec.outcomes[0].status == Status.FAILED and "not finite" in rec.outcomes[0].reason
    assert all(rec.outcomes[t].status == Status.FINISHED for t in range(1, 10))
    assert "cost" not in opt.trials[0].metrics                   # not kept as a measurement
    json.dumps(opt.handler.state_dict(), allow_nan=False)        # every multiplier finite


# --- the same loop on Ray ------------------------------------------------------------------------

def sleeper(config):
    time.sleep(config["x"])
    return {"score": -config["x"]}


@pytest.mark.slow
def test_loop_on_ray_stops_a_trial_at_its_stop_time_not_a_poll_later(ray_session):
    """On Ray the loop sleeps in ray.wait until the stop time itself: the stop fires at
    limit x (1 + margin), well before a 1 s poll would (the tolerance leaves room for a busy
    machine), and a trial that finishes in time is FINISHED."""
    from tuner.integrations.ray.backend import RayBackend, execute_trial

    # as ship_trainable does
    ray_session.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    task = ray_session.remote(num_cpus=0.5, max_retries=0)(execute_trial)
    backend = RayBackend(task, sleeper, {}, seed=0, grace=5.0)
    sleeps = {"x": {"type": "float", "low": 0.0, "high": 3.0}}     # seconds the trial sleeps
    opt = Optimizer(sleeps, algorithm="random", seed=0, clock=backend.clock,
                    constraints=[BUDGET], stop_margin=0.5, objective_bounds=(-1, 0))
    configs = iter([{"x": 0.05}, {"x": 3.0}, {"x": 0.05}, {"x": 3.0}])
    opt.suggest = _fixed(opt.suggest, configs)
    rec = Recorder()
    # warm a worker first, so the measured stop is the loop's, not a worker's start-up
    ray_session.get(task.remote(sleeper, {"x": 0.0}, {}, 0))
    assert StudyLoop(opt, backend, Limits(4, slots=2), metric="score", callbacks=[rec]).run()
    backend.close()
    stopped = [o for o in rec.outcomes.values() if o.status == Status.TIMED_OUT]
    assert len(stopped) == 2
    for o in stopped:
        assert 0.75 <= o.runtime < 0.75 + 0.25, o.runtime
        assert opt.trials[o.trial_id].metrics["runtime"] == o.runtime
    assert [o.status for o in rec.outcomes.values()].count(Status.FINISHED) == 2


def _fixed(suggest, configs):
    """``suggest`` registering the given configurations in turn."""
    return lambda: suggest(next(configs))


@pytest.mark.slow
def test_loop_on_ray_never_stops_a_trial_whose_result_is_ready(ray_session):
    """The driver stalls (a slow save or MLflow write) past a trial's stop time while its
    result is already in: the result is kept, FINISHED, with the run time the trial measured
    in its worker, not the time the driver took to collect it."""
    from tuner.integrations.ray.backend import RayBackend, execute_trial

    class Stall(LoopCallback):
        """Holds the driver until trial 1's result is in and its stop time has passed (so
        the test does not depend on how fast a worker starts on a busy machine)."""
        def on_end(self, outcome):
            if outcome.trial_id == 0:
                late = [ref for ref, tid in backend._running.items() if tid == 1]
                ray_session.wait(late, timeout=60)
                time.sleep(max(opt.trials[1].start_time + 0.8 - backend.clock(), 0.0))

    ray_session.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    task = ray_session.remote(num_cpus=0.5, max_retries=0)(execute_trial)
    # two workers warmed at once (overlapping tasks), so neither trial waits for a worker start
    ray_session.get([task.remote(sleeper, {"x": 0.5}, {}, 0) for _ in range(2)])
    backend = RayBackend(task, sleeper, {}, seed=0)
    opt = Optimizer(LINE, algorithm="random", seed=0, clock=backend.clock,
                    constraints=[BUDGET], stop_margin=0.5, objective_bounds=(-1, 0))
    opt.suggest = _fixed(opt.suggest, iter([{"x": 0.05}, {"x": 0.3}]))
    rec = Recorder()
    assert StudyLoop(opt, backend, Limits(2, slots=2), metric="score",
                     callbacks=[Stall(), rec]).run()
    late = rec.outcomes[1]
    assert late.status == Status.FINISHED, late.reason
    assert late.runtime > 0.75                               # collected after its stop time
    assert 0.3 <= late.metrics["runtime"] < 0.5              # its own run time
    assert not opt.constraints[0].observed(opt.trials[1]) > 0   # within the 0.5 s budget


@pytest.mark.slow
def test_a_worker_killed_mid_trial_fails_that_trial_and_the_study_goes_on(ray_session, tmp_path):
    import os
    import signal
    import threading

    from tuner.integrations.ray.backend import RayBackend, execute_trial

    pids = tmp_path / "pids"

    def victim(config):
        if config["x"] > 0.9:                 # the one the test kills
            pids.write_text(str(os.getpid()))
            time.sleep(30)
        return {"score": config["x"]}

    def kill_when_started():
        deadline = time.monotonic() + 60
        while not pids.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(int(pids.read_text()), signal.SIGKILL)   # the Ray worker this test's trial runs in

    ray_session.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    task = ray_session.remote(num_cpus=0.5, max_retries=0)(execute_trial)
    backend = RayBackend(task, victim, {}, seed=0)
    opt = Optimizer(LINE, algorithm="random", seed=0, clock=backend.clock)
    opt.suggest = _fixed(opt.suggest, iter([{"x": 0.95}, {"x": 0.1}, {"x": 0.2}, {"x": 0.3}]))
    rec = Recorder()
    killer = threading.Thread(target=kill_when_started)
    killer.start()
    assert StudyLoop(opt, backend, Limits(4, slots=2), metric="score", callbacks=[rec]).run()
    killer.join()
    lost = rec.outcomes[0]
    assert lost.status == Status.FAILED and "worker or node lost" in lost.reason
    assert lost.runtime < 30
    assert [rec.outcomes[t].status for t in (1, 2, 3)] == [Status.FINISHED] * 3


ONCE_ONLY_PACKAGE = '''
import pathlib, time
from . import state               # one-time state, like a C extension's (pandas' datetime API)
state.loads += 1
if state.loads > 1:
    raise ImportError("partially initialized module (imported again after an interrupted import)")
first = pathlib.Path(__file__).with_name("imported-once")
if not first.exists():             # the first import in the whole test is slow: stopped half way
    first.touch()
    end = time.time() + 10
    while time.time() < end:       # Python code: a stop (a KeyboardInterrupt) lands in here
        pass
'''


@pytest.mark.slow
def test_a_trial_stopped_while_importing_leaves_no_half_imported_worker(ray_session, tmp_path):
    """A budget stop that lands while the trial's module is still importing must not poison the
    worker for the next trial: a half-imported package left in a worker fails every later
    import of it there (seen in CI with pandas: "partially initialized module")."""
    from tuner.integrations.ray.backend import RayBackend, execute_trial

    pkg = tmp_path / "onceonly"
    pkg.mkdir()
    (pkg / "state.py").write_text("loads = 0\n")
    (pkg / "__init__.py").write_text(ONCE_ONLY_PACKAGE)
    root = str(tmp_path)

    def importer(config):
        if root not in sys.path:
            sys.path.insert(0, root)
        import onceonly  # noqa: F401
        return {"score": config["x"]}

    ray_session.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    task = ray_session.remote(num_cpus=2, max_retries=0)(execute_trial)   # one at a time
    ray_session.get(task.remote(sleeper, {"x": 0.0}, {}, 0))   # a warm worker, the one reused
    backend = RayBackend(task, importer, {}, seed=0)
    # stopped at 6 s, inside the 10 s import; the next trials have 6 s for a fresh worker
    opt = Optimizer(
        LINE,
        algorithm="random",
        seed=0,
        clock=backend.clock,
        constraints=[{**BUDGET, "limit": 4.0}],
        stop_margin=0.5,
        objective_bounds=(0, 1),
    )
    opt.suggest = _fixed(opt.suggest, iter([{"x": 0.1}, {"x": 0.2}, {"x": 0.3}]))
    rec = Recorder()
    assert StudyLoop(opt, backend, Limits(3, slots=1), metric="score", callbacks=[rec]).run()
    backend.close()
    assert rec.outcomes[0].status == Status.TIMED_OUT
    assert [rec.outcomes[t].status for t in (1, 2)] == [Status.FINISHED] * 2, \
        [rec.outcomes[t].reason for t in (1, 2)]
