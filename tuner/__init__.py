"""tuner: asynchronous, budget-aware hyperparameter tuning with censored-feedback GP bandits.

The names below are imported on first use (PEP 562), so ``tuner --help`` and ``import tuner``
stay fast; ``tuner.run`` (tune a function on Ray) loads Ray and MLflow only when called for.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "ALGORITHMS": "tuner.core.algorithms", "get_algorithm": "tuner.core.algorithms",
    "PAPER_EXACT": "tuner.core.settings", "Optimizer": "tuner.core.optimizer",
    "Settings": "tuner.core.settings", "Suggestion": "tuner.core.optimizer",
    "Status": "tuner.core.trial", "simulate": "tuner.loop.simulator",
    "SearchSpace": "tuner.core.space", "Float": "tuner.core.space", "Int": "tuner.core.space",
    "Categorical": "tuner.core.space", "SpaceError": "tuner.core.space",
    "run": "tuner.app.api", "load_study": "tuner.app.studies",
}
__all__ = sorted(_LAZY)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tuner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
