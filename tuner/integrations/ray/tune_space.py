"""Ray Tune search spaces (``tune.uniform``, ``loguniform``, ``randint``, ``choice``, ``q*``...)
converted to a ``SearchSpace``.  The only module of the space code that imports Ray.

Ray Tune's integer domains exclude ``upper`` (``randint(1, 10)`` draws 1..9, as numpy does)
except quantized ones with q > 1, which include it; the converted Int is inclusive on both ends.
Constants in the param space are not searched (Ray Tune passes them through).
"""

from __future__ import annotations

from typing import Any, Mapping

from ray.tune.search import sample

from tuner.core.space import Categorical, Float, Int, SearchSpace, SpaceError


def _convert(name: str, dom: sample.Domain) -> Float | Int | Categorical:
    sampler = dom.get_sampler()
    q = None
    if isinstance(sampler, sample.Quantized):
        q = sampler.q
        sampler = sampler.get_sampler()
    log = isinstance(sampler, sample.LogUniform)
    if isinstance(dom, sample.Categorical):
        return Categorical(tuple(dom.categories))
    if not isinstance(sampler, (sample.Uniform, sample.LogUniform)):
        raise SpaceError(
            f"space.{name}: Ray Tune sampler {type(sampler).__name__} is not "
            "supported; use uniform, loguniform, randint, lograndint, choice or q-variants"
        )
    if isinstance(dom, sample.Float):
        return Float(float(dom.lower), float(dom.upper), log, None if q is None else float(q))
    if isinstance(dom, sample.Integer):
        upper = int(dom.upper) if q is not None and q > 1 else int(dom.upper) - 1
        return Int(int(dom.lower), upper, log, int(q or 1))
    raise SpaceError(f"space.{name}: Ray Tune domain {type(dom).__name__} is not supported")


def from_tune(param_space: Mapping[str, Any]) -> SearchSpace:
    """Searchable parameters of a (flat) Ray Tune ``param_space``; constants are skipped."""
    params = {}
    for name, value in param_space.items():
        if isinstance(value, sample.Function):
            raise SpaceError(f"space.{name}: tune.sample_from cannot be modelled by a GP; "
                             "use uniform, loguniform, randint, lograndint, choice or q-variants")
        if isinstance(value, sample.Domain):
            params[name] = _convert(name, value)
        elif isinstance(value, Mapping):
            raise SpaceError(f"space.{name}: nested search spaces are not supported; "
                             "flatten the param_space")
    return SearchSpace(params)
