"""Small CNN in torch trained with Adam (paper 001 §6.2, App. C.2).

conv 3x3, 8 channels -> ReLU -> max-pool 3 -> fully connected 8 -> ReLU -> output, trained
with Adam and inverse-time learning-rate decay (``training``).  Data: scikit-learn's 8x8
digits by default (conv 8x8 -> 6x6, pool -> 2x2, 32 features), MNIST through torchvision when
its files are at ``mnist_root`` (28x28 -> 26x26 -> 8x8, 512 features).  Learning rate and
decay are searched on a log scale (the paper's code scales linearly; they span six decades).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import data
from tuner.core.fields import Field

from .options import DELAY, SGD_CONFIG, SPLIT, THREADS, Option, absolute, choice, sgd_space

if TYPE_CHECKING:
    from torch import nn

SPACE = sgd_space(128, 512)
CONFIG = SGD_CONFIG
AUTO_EPOCHS = {"digits": 80, "mnist": 1}
WARM_UP = {"epochs": 1}      # a short run's options (Trainable.warm_up_options)
OPTIONS = {
    "dataset": Option("digits", choice(*data.IMAGES),
                      "digits (scikit-learn 8x8, shipped) or mnist (files at mnist_root)"),
    "mnist_root": Option("data", Field((str,)),
                         "directory holding MNIST/raw/ with the four uncompressed IDX files",
                         normalize=absolute),
    **SPLIT,
    "epochs": Option("auto", Field((int,), words=("auto",), minimum=1),
                     f"passes over the training data; auto = {AUTO_EPOCHS}"),
    **THREADS,
    **DELAY,
}


def make_model(side: int, n_classes: int) -> "nn.Sequential":
    """The paper's CNN for square single-channel images of ``side`` pixels."""
    from torch import nn   # imported where a trial runs, never where a study is validated

    pooled = (side - 2) // 3
    if pooled < 1:
        raise ValueError(f"images of {side}x{side} pixels are too small for conv 3 + pool 3")
    return nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=3), nn.ReLU(), nn.MaxPool2d(3), nn.Flatten(),
        nn.Linear(8 * pooled * pooled, 8), nn.ReLU(), nn.Linear(8, n_classes))


def epochs(options: dict) -> int:
    """Passes over the training data (``auto``: per data set)."""
    return AUTO_EPOCHS[options["dataset"]] if options["epochs"] == "auto" else options["epochs"]


def _trial(config: dict, options: dict, seed: int, report: bool):
    import torch

    from . import training

    split = data.images(options["dataset"], options["mnist_root"], options["val_fraction"],
                        options["split_seed"])
    with training.torch_trial(options["threads"], seed):
        model = make_model(split.X_train.shape[-1], split.n_classes)
        adam = torch.optim.Adam(model.parameters(), lr=config["lr"])
        fitting = training.fit_epochs(model, adam, config["lr_decay"], split.X_train,
                                      split.y_train, config["batch_size"], epochs(options))
        if report:
            yield from training.report_epochs(
                model, fitting, lambda: training.accuracy(model, split.X_val, split.y_val))
            return
        spent = 0.0
        for _, spent in fitting:
            pass
        yield {"accuracy": training.accuracy(model, split.X_val, split.y_val), "train_time": spent}


def run(config: dict, options: dict, seed: int) -> tuple[float, float]:
    """Train on the split, return (validation accuracy, training seconds)."""
    for out in _trial(config, options, seed, report=False):
        pass
    return out["accuracy"], out["train_time"]


def steps(config: dict, options: dict, seed: int):
    """Train on the split; after each epoch yield ``{"epoch", "accuracy", "train_time"}``."""
    return _trial(config, options, seed, report=True)
