"""The algorithms, as compositions of three switches over one GP and one censoring mechanism.

=================  ==========  ============  =========================================
name               estimate    pending       paper
=================  ==========  ============  =========================================
gp-ucb-sdf         ucb         censor + nu   001 §3.2 eq. 2 (GP-UCB-SDF)
gp-ts-sdf          ts          censor + nu   001 §3.2 eq. 3 (GP-TS-SDF)
randgp-ucb         rand        censor + nu   003 Def. 2 (RandGP-UCB), on censored feedback
gp-ei-sdf          log EI      censor        none: log EI (Ament et al. 2023) on 001's censored GP
gp-ucb             ucb         ignore        002 (GP-UCB), baseline of 001 §6
gp-bucb            ucb         hallucinate   Desautels et al. 2014, baseline of 001 §6
gp-bts             ts          hallucinate   Chowdhury & Gopalan 2019, baseline of 001 §6
asy-ts             ts          ignore        Kandasamy et al. 2018, baseline of 001 §6
random             random      -             random search
=================  ==========  ============  =========================================

``auto`` (a study's default, ``chosen_algorithm``) is ``gp-ei-sdf`` on a space of categoricals
only, without constraints or a context, while at most 3 trials run, and ``gp-ucb-sdf``
otherwise; it is chosen at each suggestion.

"censor + nu": pending trials enter the GP at the objective's minimum and the exploration
weight gets the delay term of eq. 2; the baselines use nu_t = beta_t; log EI has no weight.
``research.censoring`` says how: ``hard`` with the GP's own noise (eq. 1 as printed), ``soft``
with a noise of their own (``censor_noise`` x amplitude), a pull towards the minimum rather than
an observation of it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Algorithm:
    name: str
    estimate: str
    pending: str
    delay_bonus: bool

    @property
    def smooth(self) -> bool:
        """Deterministic in x given the posterior, so L-BFGS-B refinement applies."""
        return self.estimate in ("ucb", "rand", "ei")


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (Algorithm("gp-ucb-sdf", "ucb", "censor", True),
              Algorithm("gp-ts-sdf", "ts", "censor", True),
              Algorithm("randgp-ucb", "rand", "censor", True),
              Algorithm("gp-ei-sdf", "ei", "censor", False),
              Algorithm("gp-ucb", "ucb", "ignore", False),
              Algorithm("gp-bucb", "ucb", "hallucinate", False),
              Algorithm("gp-bts", "ts", "hallucinate", False),
              Algorithm("asy-ts", "ts", "ignore", False),
              Algorithm("random", "random", "ignore", False))
}


# The name that picks one of ALGORITHMS by the space and the pool (``chosen_algorithm``).
AUTO = "auto"
# ``auto`` uses log EI on a space of categoricals only while at most this many trials run.
EI_POOL = 3


def chosen_algorithm(name: str, categorical_only: bool, constrained: bool, context: bool,
                     running: int | None = None) -> str:
    """The algorithm ``name`` stands for: itself, or for ``auto`` log EI (``gp-ei-sdf``) on a
    space of categoricals only, without constraints or a context, while at most ``EI_POOL``
    trials run, and ``gp-ucb-sdf`` otherwise.  There UCB's exploration weight spends late
    trials on categories the GP already rules out; in a wide pool eq. 2's delay term, which
    log EI lacks, spreads the many running trials (docs/research/notes/method.md "Log EI on
    spaces of categories").

    Args:
        name: an algorithm's name (``ALGORITHMS``) or ``auto``.
        categorical_only: every searched parameter is a categorical.
        constrained: the study has black-box constraints.
        context: the study has a context (paper 001 §5).
        running: the trials running as the choice is made; None: a wide pool.
    """
    if name.lower() != AUTO:
        return name
    small = running is not None and running <= EI_POOL
    return ("gp-ei-sdf" if categorical_only and small and not constrained and not context
            else "gp-ucb-sdf")


def get_algorithm(name: str) -> Algorithm:
    key = name.lower().replace("_", "-")
    if key not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)} (got {name!r})")
    return ALGORITHMS[key]
