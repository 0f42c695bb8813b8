"""tuner: asynchronous, budget-aware hyperparameter tuning with censored-feedback GP bandits."""

from .algorithms import ALGORITHMS, get_algorithm
from .optimizer import PAPER_EXACT, Optimizer, Settings, Suggestion
from .space import Categorical, Float, Int, SearchSpace, SpaceError

__all__ = ["ALGORITHMS", "PAPER_EXACT", "get_algorithm", "Optimizer", "Settings", "Suggestion", "SearchSpace",
           "Float", "Int", "Categorical", "SpaceError"]
__version__ = "0.1.0"
