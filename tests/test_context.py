"""Contexts (paper 001 §5): CGP-UCB-SDF and CGP-TS-SDF learn how the best configuration moves
with the context, keep censoring and constraints, and are saved and resumed like the rest."""

import numpy as np
import pytest

from conftest import optimizer
from tuner import Optimizer
from tuner.core.kernels import SquaredExponential, make_kernel
from tuner.core.space import SpaceError
from tuner.loop.simulator import SimClock

LINE = {"x": {"type": "float", "low": 0.0, "high": 1.0}}
Z = {"z": {"type": "float", "low": 0.0, "high": 1.0}}


def g(x, z):
    """The best x moves with the context: x* = z."""
    return -(x - z) ** 2


def trained(algorithm="gp-ucb-sdf", n=40, value=g, objective_bounds=(-1, 0), **kw):
    """An optimizer told ``value`` (g unless given) at contexts 0.2 and 0.8 only."""
    opt = optimizer(LINE, context_space=Z, algorithm=algorithm, seed=0,
                    objective_bounds=objective_bounds, clock=SimClock(), **kw)
    rng = np.random.default_rng(0)
    for _ in range(n):
        z = float(rng.choice([0.2, 0.8]))
        s = opt.suggest(context={"z": z})
        opt.tell(s.trial_id, value(s.config["x"], z))
    return opt


@pytest.mark.parametrize("algorithm", ["gp-ucb-sdf", "gp-ts-sdf", "gp-ei-sdf"])
def test_the_choice_follows_the_context_also_one_never_seen(algorithm):
    opt = trained(algorithm)
    for z in (0.2, 0.5, 0.8):            # 0.5: between the two seen
        s = opt.suggest(context={"z": z})
        assert abs(s.config["x"] - z) < 0.1, (z, s.config)
        assert opt.trials[s.trial_id].context == {"z": z}
        assert s.config.keys() == {"x"}


def test_without_the_context_the_gp_cannot_tell_the_tasks_apart():
    """The same data without the context (one GP for all tasks): the choice sits between the
    two optima whatever the task, the contextual GP's does not."""
    plain = Optimizer(LINE, seed=0, objective_bounds=(-1, 0), clock=SimClock())
    rng = np.random.default_rng(0)
    for _ in range(40):
        z = float(rng.choice([0.2, 0.8]))
        s = plain.suggest()
        plain.tell(s.trial_id, g(s.config["x"], z))
    x = plain.suggest().config["x"]
    assert min(abs(x - 0.2), abs(x - 0.8)) > 0.1
    assert abs(trained().suggest(context={"z": 0.8}).config["x"] - 0.8) < 0.1


def test_earlier_results_with_their_contexts_warm_start_a_new_optimizer():
    """Registered trials (an earlier study's, with their contexts) are told like any other."""
    old = trained()
    new = Optimizer(LINE, context_space=Z, seed=1, objective_bounds=(-1, 0), clock=SimClock())
    for tr in old.trials:
        s = new.suggest(tr.config, context=tr.context)
        new.tell(s.trial_id, tr.value)
    assert abs(new.suggest(context={"z": 0.35}).config["x"] - 0.35) < 0.1


def test_pending_trials_are_censored_in_the_joint_space():
    """A running trial at (x, z) is a censored GP input at that joint point (eq. 1)."""
    opt = trained(n=20)
    s = opt.suggest(context={"z": 0.5})
    x = opt.trials[s.trial_id].x
    assert np.allclose(x, [s.config["x"], 0.5]) and len(x) == 2
    # soft censoring: the running trial is the censored block
    post = opt.objective_posterior()
    assert len(post.Xc) == 1 and np.allclose(post.Xc[0], x)
    assert opt.censored_targets()[-1] == 0.0         # at the minimum of the bounds (-1 -> 0)


def test_a_constraint_works_unchanged_with_a_context():
    cost = {"metric": "cost", "limit": 0.5, "type": "upper"}       # cost = x: x <= 0.5
    opt = Optimizer(LINE, context_space=Z, seed=0, objective_bounds=(-1, 0), clock=SimClock(),
                    constraints=[cost])
    rng = np.random.default_rng(0)
    for _ in range(30):
        z = float(rng.choice([0.2, 0.8]))
        s = opt.suggest(context={"z": z})
        opt.tell(s.trial_id, g(s.config["x"], z), {"cost": s.config["x"]})
    s = opt.suggest(context={"z": 0.8})          # best feasible for z = 0.8: x = 0.5
    assert 0.35 < s.config["x"] <= 0.55


def test_save_and_load_keep_the_contexts_and_the_next_suggestion(tmp_path):
    opt = trained(n=25)
    opt.save(tmp_path / "state.json")
    again = Optimizer.load(tmp_path / "state.json", clock=opt.clock)
    assert again.contexts.space.names == ["z"]
    assert [tr.context for tr in again.trials] == [tr.context for tr in opt.trials]
    assert opt.suggest(context={"z": 0.3}).config == again.suggest(context={"z": 0.3}).config


def test_a_state_without_contexts_is_written_as_before():
    opt = Optimizer(LINE, seed=0, clock=SimClock())
    opt.suggest()
    state = opt.state_dict()
    assert "context_space" not in state and "context" not in state["trials"][0]


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: Optimizer(LINE, context_space=Z).suggest(),
         ["context_space", "suggest(context=", "z"]),
        (lambda: Optimizer(LINE, context_space=Z).suggest(context={"z": 0.1, "n_rows": 3}),
         ["unknown", "n_rows", "z"]),
        (lambda: Optimizer(LINE, context_space=Z).suggest(context={}), ["missing", "z"]),
        (lambda: Optimizer(LINE).suggest(context={"z": 0.1}), ["context_space"]),
        (
            lambda: Optimizer(
                LINE, context_space={"v": {"type": "categorical", "choices": ["a", "b"]}}
            ).suggest(context={"v": "c"}),
            ["context 'v'", "choices"],
        ),
        (lambda: Optimizer(LINE, context_space=Z).suggest(context={"z": 1.5}),
         ["context 'z'", "outside"]),
        (lambda: Optimizer(LINE, context_space=Z).suggest(context={"z": "big"}), ["context 'z'"]),
        (lambda: Optimizer(LINE, context_space={"x": Z["z"]}), ["context_space", "x", "name"]),
        (
            lambda: Optimizer(LINE, context_space={"z": {"type": "float", "low": 1, "high": 0}}),
            ["z"],
        ),
        (lambda: Optimizer(LINE, context_space=Z, domain=np.array([[0.1], [0.2]])), ["domain"]),
    ],
)
def test_bad_contexts_say_what_is_wrong(make, words):
    with pytest.raises((ValueError, SpaceError)) as err:
        make()
    assert all(w in str(err.value) for w in words), str(err.value)


def test_the_product_kernel_of_two_se_kernels_is_the_se_kernel_on_the_joint_input():
    """Krause & Ong's k_Z(z, z') k_Q(x, x'): with ARD SE kernels it is the joint SE kernel the
    GP computes, so composing the context kernel needs no second kernel."""
    rng = np.random.default_rng(0)
    X, Zs = rng.random((5, 2)), rng.random((5, 3))
    lx, lz = np.array([0.3, 0.7]), np.array([0.2, 0.5, 1.1])
    se = SquaredExponential()
    joint = se(np.hstack([X, Zs]), np.hstack([X, Zs]), 2.0, np.concatenate([lx, lz]))
    assert np.allclose(joint, se(X, X, 2.0, lx) * se(Zs, Zs, 1.0, lz))


# --- the shared-context kernel (context_kernel: shared) -------------------------------------------

@pytest.mark.parametrize("name", ["se", "matern52"])
@pytest.mark.parametrize("one_context", ["none", "X2", "X1", "same"])
def test_the_shared_context_kernel_is_its_formula_computed_in_parts(name, one_context):
    """k = a (w rho(r_x) + (1 - w) rho(r)), computed from r_x and r_z apart (one exponential for
    SE; the context part as one column (row) when the candidates (the data) share a context)."""
    rng = np.random.default_rng(5)
    X1, X2, ls = rng.random((30, 4)), rng.random((20, 4)), np.array([0.3, 0.7, 0.4, 0.9])
    if one_context == "X2":
        X2[:, -2:] = X2[0, -2:]
    elif one_context == "X1":
        X1[:, -2:] = X1[0, -2:]
    elif one_context == "same":
        X2 = X1
    k = make_kernel(name, n_context=2)
    plain = make_kernel(name)
    want = 1.7 * (0.3 * plain(X1[:, :2], X2[:, :2], 1.0, ls[:2]) + 0.7 * plain(X1, X2, 1.0, ls))
    got = k(X1, X2, 1.7, ls, share=0.3)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-14)
    if X2 is X1:
        assert np.allclose(np.diag(got), 1.7, rtol=1e-14) and np.allclose(got, got.T, rtol=1e-14)
    # with the contexts' level u: (1 - u) times the above plus u rho(r_z); k(x, x) stays a
    level = 0.8 * want + 0.2 * 1.7 * plain(X1[:, 2:], X2[:, 2:], 1.0, ls[2:])
    got = k(X1, X2, 1.7, ls, share=0.3, level=0.2)
    assert np.allclose(got, level, rtol=1e-12, atol=1e-14)
    if X2 is X1:
        assert np.allclose(np.diag(got), 1.7, rtol=1e-14)


def test_the_shared_context_kernel_has_the_gradient_of_its_likelihood():
    from tuner.core.marginal_likelihood import negative_log_marginal_likelihood, pairwise_sqdiff
    from tuner.core.kernels import make_kernel

    rng = np.random.default_rng(0)
    X = rng.random((20, 4))
    y = np.sin(3 * X[:, 0]) + 0.3 * X[:, 3]
    S, ctx = pairwise_sqdiff(X), np.array([False, False, True, True])
    y[X[:, 2] > 0.5] += 1.0          # a level that differs between contexts
    for name, level in [("se", False), ("matern52", False), ("se", True), ("matern52", True)]:
        kernel = make_kernel(name, n_context=2)
        # log a, log l (4), logit w, (logit u,) log noise
        theta = np.array([0.1, -0.5, 0.2, -1.0, 0.3, 0.4] + [-0.7] * level + [-3.0])
        _, grad = negative_log_marginal_likelihood(theta, kernel, S, y, ctx, level)
        step = np.eye(len(theta)) * 1e-6
        numeric = [
            (
                negative_log_marginal_likelihood(theta + e, kernel, S, y, ctx, level)[0]
                - negative_log_marginal_likelihood(theta - e, kernel, S, y, ctx, level)[0]
            )
            / 2e-6
            for e in step
        ]
        np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("moves, share", [(False, (0.9, 1.0)), (True, (0.0, 0.5))])
def test_the_shared_part_is_large_when_the_contexts_share_their_optimum(moves, share):
    """w (the part every context shares) is fit by the evidence: near 1 when g does not depend
    on the context, small when the optimum moves with it; the choice still follows the context."""
    opt = trained(value=lambda x, z: g(x, z if moves else 0.5), context_kernel="shared",
                  refit_every=5)
    w = opt.objective.gp_all.hyper.share
    assert share[0] <= w <= share[1], w
    if moves:
        assert abs(opt.suggest(context={"z": 0.8}).config["x"] - 0.8) < 0.1
    again = Optimizer.from_state(opt.state_dict(), clock=SimClock())
    assert again.objective.gp_all.hyper.share == w
    assert again.suggest(context={"z": 0.2}).config == opt.suggest(context={"z": 0.2}).config


@pytest.mark.parametrize("step, level", [(0.0, (0.0, 0.01)), (0.5, (0.1, 0.6))])
def test_the_level_of_each_context_is_fit_by_the_evidence(step, level):
    """context_kernel: shared-level adds h(z), a level no configuration changes: its weight u
    is near 0 when the contexts share their level and grows when the level moves with z, while
    the shared part stays large (the optimum does not move); saved and resumed with the rest."""
    opt = trained(value=lambda x, z: -(x - 0.5) ** 2 + step * z, objective_bounds=(-1, 1),
                  context_kernel="shared-level", refit_every=5)
    hyper = opt.objective.gp_all.hyper
    assert level[0] <= hyper.level <= level[1] and hyper.share > 0.9, hyper
    again = Optimizer.from_state(opt.state_dict(), clock=SimClock())
    assert again.objective.gp_all.hyper.level == hyper.level
    assert again.suggest(context={"z": 0.5}).config == opt.suggest(context={"z": 0.5}).config


def test_a_copy_of_a_running_trial_is_judged_without_the_contexts_level():
    """running_correlation keeps x_t off copies of a running x_s; with the contexts' level every
    two configurations at one context correlate by at least u, which must not widen what counts
    as a copy: the same configurations are copies at u = 0.9 as without a level."""
    from dataclasses import replace

    opt = trained(context_kernel="shared-level")
    s = opt.suggest(context={"z": 0.5})              # running at (x_s, 0.5)
    gp = opt.objective.gp_done
    U = np.linspace(0, 1, 2001)[:, None]
    masks = []
    for level in (None, 0.9):
        gp.set_hyperparameters(replace(gp.hyper, level=level))
        masks.append(opt.chooser._near_running(opt.contexts.encode({"z": 0.5}))(U))
    assert masks[0].any() and not masks[0].all()
    assert (masks[1] == masks[0]).all()
    assert abs(U[masks[0], 0].mean() - s.config["x"]) < 0.01


@pytest.mark.parametrize("context_kernel", ["shared-level", "shared", "product"])
def test_the_correlation_of_two_contexts_says_how_much_one_tells_about_the_other(context_kernel):
    """context_correlation: near 1 when the contexts share the objective's shape (only the
    level moves), lower when the optimum moves with the context; 1 for equal contexts."""
    def told(moves):
        return trained(value=lambda x, z: g(x, z if moves else 0.5) + 0.3 * z,
                       objective_bounds=(-1, 1), context_kernel=context_kernel, refit_every=5)

    alike, moving = told(False), told(True)
    assert alike.context_correlation({"z": 0.2}, {"z": 0.2}) == pytest.approx(1.0)
    near = alike.context_correlation({"z": 0.2}, {"z": 0.8})
    far = moving.context_correlation({"z": 0.2}, {"z": 0.8})
    assert near > 0.9 and far < near - 0.2, (near, far)
    with pytest.raises(ValueError, match="no context_space"):
        Optimizer(LINE, seed=0).context_correlation({"z": 0.2}, {"z": 0.8})


def test_at_a_context_without_a_result_the_choice_is_the_posterior_mean_best():
    """new_context: mean (default): until a result at z_t arrives, x_t maximizes the posterior
    mean at z_t (no exploration term); once one has, UCB again.  "ucb" is paper 001's rule."""
    from tuner import PAPER_EXACT, Settings

    assert Settings.from_dict(PAPER_EXACT).research.search.new_context == "ucb"
    opt = trained()
    s = opt.suggest(context={"z": 0.5})              # no result at 0.5 yet
    assert opt.last_nu == 0.0
    post = opt.objective_posterior()
    U = np.linspace(0, 1, 201)[:, None]
    mean = post.predict(np.hstack([U, np.full_like(U, 0.5)]))[0]
    assert abs(s.config["x"] - U[np.argmax(mean), 0]) < 0.02
    opt.tell(s.trial_id, g(s.config["x"], 0.5))
    opt.suggest(context={"z": 0.5})
    assert opt.last_nu > 0.0
    assert opt.suggest(context={"z": 0.2}) and opt.last_nu > 0.0
    ucb = trained(new_context="ucb")
    ucb.suggest(context={"z": 0.5})
    assert ucb.last_nu > 0.0


def test_log_ei_at_a_new_context_is_the_posterior_mean_best_too():
    """With gp-ei-sdf, a context without a result has no incumbent of its own: the rule above
    (the posterior mean's maximum) applies to log EI as to UCB.  After six results, log EI's
    own maximum at z = 0.5 lies elsewhere (0.35 against the mean's 0.71)."""
    opt = trained("gp-ei-sdf", n=6)
    U = np.linspace(0, 1, 201)[:, None]
    mean = opt.objective_posterior().predict(np.hstack([U, np.full_like(U, 0.5)]))[0]
    s = opt.suggest(context={"z": 0.5})
    assert abs(s.config["x"] - U[np.argmax(mean), 0]) < 0.02


def test_a_context_that_changes_at_every_suggestion_keeps_exploring():
    """Only contexts that repeat (tasks, datasets, studies) start from the mean: with a new
    float context at every call, every suggestion is still UCB (nu_t > 0 once results exist)."""
    opt = Optimizer(LINE, context_space=Z, seed=0, objective_bounds=(-1, 0), clock=SimClock())
    rng = np.random.default_rng(3)
    nus = []
    for _ in range(20):
        z = float(rng.random())
        s = opt.suggest(context={"z": z})
        nus.append(opt.last_nu)
        opt.tell(s.trial_id, g(s.config["x"], z))
    assert all(nu > 0.0 for nu in nus[2:])
