"""RBF support-vector classifier (scikit-learn ``SVC``), paper 001 §6.2, App. C.2.

The paper tunes C in [1e-4, 100] and gamma in [1e-4, 10] on the Pima Indians diabetes data
(Kaggle), which scikit-learn does not ship (its ``load_diabetes`` is a regression set) and
this machine cannot download; the default here is scikit-learn's breast cancer set, the
binary medical-diagnosis set of the paper's LR experiment, standardized, 70/30 stratified
split as the paper's code does.  Searched on a log scale (the paper's code scales linearly).
"""

from __future__ import annotations

import time

from sklearn.svm import SVC

from . import data
from .options import DELAY, SPLIT, TABULAR_DATA, number

SPACE = {
    "C": {"type": "float", "low": 1e-4, "high": 100.0, "log": True},
    "gamma": {"type": "float", "low": 1e-4, "high": 10.0, "log": True},
}
CONFIG = {"C": number(0.0, low_open=True), "gamma": number(0.0, low_open=True)}
OPTIONS = {
    **TABULAR_DATA,
    **SPLIT,
    **DELAY,
}


def run(config: dict, options: dict, seed: int) -> tuple[float, float]:
    """Fit on the split, return (validation accuracy, fit seconds); ``seed`` does not enter:
    the SVC fit is deterministic."""
    split = data.tabular(options["dataset"], options["val_fraction"], options["split_seed"],
                         options["standardize"])
    clf = SVC(kernel="rbf", C=config["C"], gamma=config["gamma"])
    start = time.perf_counter()
    clf.fit(split.X_train, split.y_train)
    train_time = time.perf_counter() - start
    return float(clf.score(split.X_val, split.y_val)), train_time
