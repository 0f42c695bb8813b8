"""Logistic regression in torch trained by minibatch SGD (paper 001 §6.2, App. C.2).

Softmax (multinomial) logistic regression: one linear layer, cross-entropy loss, plain SGD
with inverse-time learning-rate decay (``training``).  Default data: scikit-learn's breast
cancer set (the paper's), standardized, 70/30 split.  The paper's code scales its unit cube
linearly onto the ranges; here learning rate and decay are searched on a log scale, since they
span six decades.
"""

from __future__ import annotations

from . import data
from .options import DELAY, SGD_CONFIG, SPLIT, TABULAR_DATA, THREADS, Option, integer, sgd_space

SPACE = sgd_space(32, 128)
CONFIG = SGD_CONFIG
WARM_UP = {"epochs": 1}      # a short run's options (Trainable.warm_up_options)
OPTIONS = {
    **TABULAR_DATA,
    **SPLIT,
    "epochs": Option(500, integer(1), "passes over the training data"),
    **THREADS,
    **DELAY,
}


def epochs(options: dict) -> int:
    return options["epochs"]


def _trial(config: dict, options: dict, seed: int, report: bool):
    import torch   # imported where a trial runs, never where a study is validated
    from torch import nn

    from . import training

    split = data.tabular(options["dataset"], options["val_fraction"], options["split_seed"],
                         options["standardize"])
    X_tr, y_tr = torch.tensor(split.X_train), torch.tensor(split.y_train)
    X_val, y_val = torch.tensor(split.X_val), torch.tensor(split.y_val)
    with training.torch_trial(options["threads"], seed):
        model = nn.Linear(X_tr.shape[1], split.n_classes)
        sgd = torch.optim.SGD(model.parameters(), lr=config["lr"])
        fitting = training.fit_epochs(model, sgd, config["lr_decay"], X_tr, y_tr,
                                      config["batch_size"], options["epochs"])
        if report:
            yield from training.report_epochs(model, fitting,
                                              lambda: training.accuracy(model, X_val, y_val))
            return
        spent = 0.0
        for _, spent in fitting:
            pass
        yield {"accuracy": training.accuracy(model, X_val, y_val), "train_time": spent}


def run(config: dict, options: dict, seed: int) -> tuple[float, float]:
    """Train on the split, return (validation accuracy, training seconds)."""
    for out in _trial(config, options, seed, report=False):
        pass
    return out["accuracy"], out["train_time"]


def steps(config: dict, options: dict, seed: int):
    """Train on the split; after each epoch yield ``{"epoch", "accuracy", "train_time"}``."""
    return _trial(config, options, seed, report=True)
