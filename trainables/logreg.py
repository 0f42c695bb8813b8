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
OPTIONS = {
    **TABULAR_DATA,
    **SPLIT,
    "epochs": Option(500, integer(1), "passes over the training data"),
    **THREADS,
    **DELAY,
}


def run(config: dict, options: dict, seed: int) -> tuple[float, float]:
    """Train on the split, return (validation accuracy, training seconds)."""
    import torch   # imported where a trial runs, never where a study is validated
    from torch import nn

    from . import training

    split = data.tabular(options["dataset"], options["val_fraction"], options["split_seed"],
                         options["standardize"])
    X_tr, y_tr = torch.tensor(split.X_train), torch.tensor(split.y_train)
    with training.torch_trial(options["threads"], seed):
        model = nn.Linear(X_tr.shape[1], split.n_classes)
        sgd = torch.optim.SGD(model.parameters(), lr=config["lr"])
        train_time = training.fit(model, sgd, config["lr_decay"], X_tr, y_tr,
                                  config["batch_size"], options["epochs"])
        acc = training.accuracy(model, torch.tensor(split.X_val), torch.tensor(split.y_val))
    return acc, train_time
