"""Minibatch training shared by the torch trainables (logistic regression, CNN).

Learning-rate decay follows the paper authors' code: paper 001 App. C.2 tunes a "learning rate
decay" in [1e-6, 1] without a formula, and its released code (github.com/daizhongxiang/BO-SDF)
ships only the SVM experiment; the same authors' BO-BOS code tunes the same hyperparameter as
Keras's ``decay`` optimizer argument, which is inverse-time decay per update:

    lr_t = lr / (1 + decay * t),   t = number of optimizer steps (minibatches) taken so far.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Callable, Iterator

import torch
from torch import nn


@contextmanager
def torch_trial(threads: int, seed: int) -> Iterator[None]:
    """Run a trial with ``threads`` intra-op threads and torch's CPU generator seeded by
    ``seed``; the caller's thread count and random state are restored afterwards."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            yield
    finally:
        torch.set_num_threads(previous)


def inverse_time_decay(optimizer: torch.optim.Optimizer,
                       decay: float) -> torch.optim.lr_scheduler.LambdaLR:
    """lr_t = lr / (1 + decay * t), stepped once per minibatch (see module docstring)."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: 1.0 / (1.0 + decay * t))


def fit_epochs(model: nn.Module, optimizer: torch.optim.Optimizer, decay: float, X: torch.Tensor,
               y: torch.Tensor, batch_size: int, epochs: int) -> Iterator[tuple[int, float]]:
    """Minimize cross-entropy over shuffled minibatches (the last one may be smaller) for
    ``epochs`` passes; after each, yield (epochs done, training seconds so far,
    ``time.perf_counter``), the model left in training mode."""
    loss_fn = nn.CrossEntropyLoss()
    schedule = inverse_time_decay(optimizer, decay)
    n = len(X)
    spent = 0.0
    for epoch in range(1, epochs + 1):
        model.train()
        start = time.perf_counter()
        order = torch.randperm(n)
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(X[idx]), y[idx]).backward()
            optimizer.step()
            schedule.step()
        spent += time.perf_counter() - start
        yield epoch, spent


def fit(model: nn.Module, optimizer: torch.optim.Optimizer, decay: float, X: torch.Tensor,
        y: torch.Tensor, batch_size: int, epochs: int) -> float:
    """``fit_epochs`` to the end; returns the training seconds."""
    spent = 0.0
    for _, spent in fit_epochs(model, optimizer, decay, X, y, batch_size, epochs):
        pass
    return spent


def report_epochs(model: nn.Module, epochs: Iterator[tuple[int, float]],
                  evaluate: Callable[[], float]) -> Iterator[dict[str, float]]:
    """After each epoch: ``{"epoch", "accuracy", "train_time"}`` (the validation accuracy then,
    the training seconds so far, evaluation not counted)."""
    for epoch, spent in epochs:
        yield {"epoch": float(epoch), "accuracy": evaluate(), "train_time": spent}


@torch.no_grad()
def accuracy(model: nn.Module, X: torch.Tensor, y: torch.Tensor, chunk: int = 4096) -> float:
    """Share of correctly classified rows (argmax of the logits), evaluated in chunks."""
    model.eval()
    correct = sum(int((model(X[i:i + chunk]).argmax(1) == y[i:i + chunk]).sum())
                  for i in range(0, len(X), chunk))
    return correct / len(X)
