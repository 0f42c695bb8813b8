"""tuner: asynchronous, budget-aware hyperparameter tuning with censored-feedback GP bandits."""

from tuner.core.algorithms import ALGORITHMS, get_algorithm
from tuner.core.optimizer import PAPER_EXACT, Optimizer, Settings, Suggestion
from tuner.core.space import Categorical, Float, Int, SearchSpace, SpaceError

__all__ = ["ALGORITHMS", "PAPER_EXACT", "get_algorithm", "Optimizer", "Settings", "Suggestion", "SearchSpace",
           "Float", "Int", "Categorical", "SpaceError", "run"]
__version__ = "0.1.0"


def __getattr__(name: str):
    """``tuner.run`` (tune a function on Ray) is imported on first use: ``import tuner`` stays
    free of Ray and MLflow."""
    if name == "run":
        from .app.api import run
        return run
    raise AttributeError(f"module 'tuner' has no attribute {name!r}")
