"""Data sets and train/validation splits of the trainables, cached per process.

Tabular data (SVM, logistic regression) and images (CNN) ship with scikit-learn; MNIST is read
through torchvision from files the user has put in place, never downloaded.  Every loader is
``functools.lru_cache``-d on its arguments, so a Ray worker that runs many trials loads a data
set once.  scikit-learn is imported when a data set is loaded, not with this module: the
synthetic trainable and a user's function (and validating any study) never import it, which
saves seconds at start-up in the driver and in each Ray worker.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

TABULAR = {"breast_cancer": "load_breast_cancer", "digits": "load_digits"}   # sklearn.datasets
IMAGES = ("digits", "mnist")
MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
               "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


@dataclass(frozen=True)
class Split:
    """Training and validation arrays (numpy for tabular data, torch tensors for images)."""

    X_train: Any
    y_train: Any
    X_val: Any
    y_val: Any
    n_classes: int


def _read_only(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.setflags(write=False)


def _split(X: np.ndarray, y: np.ndarray, val_fraction: float, split_seed: int):
    """Stratified split, ``val_fraction`` held out (paper 001 App. C.2: 70/30)."""
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=val_fraction, stratify=y, random_state=split_seed)


@lru_cache(maxsize=8)
def tabular(dataset: str, val_fraction: float = 0.3, split_seed: int = 0,
            standardize: bool = True) -> Split:
    """Feature matrix of a scikit-learn data set split 70/30; with ``standardize`` the features
    are centred and scaled with statistics of the training part only."""
    if dataset not in TABULAR:
        raise ValueError(f"unknown tabular data set {dataset!r}; allowed: {sorted(TABULAR)}")
    import sklearn.datasets

    bunch = getattr(sklearn.datasets, TABULAR[dataset])()
    X_tr, X_va, y_tr, y_va = _split(bunch.data, bunch.target, val_fraction, split_seed)
    if standardize:
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler().fit(X_tr)
        X_tr, X_va = scaler.transform(X_tr), scaler.transform(X_va)
    X_tr, X_va = X_tr.astype(np.float32), X_va.astype(np.float32)
    y_tr, y_va = y_tr.astype(np.int64), y_va.astype(np.int64)
    _read_only(X_tr, X_va, y_tr, y_va)
    return Split(X_tr, y_tr, X_va, y_va, int(bunch.target.max()) + 1)


def mnist_raw_folder(root: str) -> str:
    """Where torchvision's ``MNIST(root)`` reads its files: ``<root>/MNIST/raw``."""
    return os.path.join(os.path.abspath(root), "MNIST", "raw")


def require_mnist(root: str) -> None:
    """Raise ``FileNotFoundError`` naming the folder and the files it lacks."""
    folder = mnist_raw_folder(root)
    missing = [f for f in MNIST_FILES if not os.path.isfile(os.path.join(folder, f))]
    if missing:
        raise FileNotFoundError(
            f"MNIST not found: {folder} lacks {missing}. Expected the four uncompressed IDX "
            f"files {list(MNIST_FILES)} in <mnist_root>/MNIST/raw/ (the layout "
            f"torchvision.datasets.MNIST uses; gunzip the *.gz files there). Nothing is "
            f"downloaded: set the option 'mnist_root' to the directory that holds MNIST/raw, "
            f"or use dataset 'digits'.")


@lru_cache(maxsize=4)
def images(dataset: str, root: str = "data", val_fraction: float = 0.3,
           split_seed: int = 0) -> Split:
    """Images as float tensors (N, 1, H, W) in [0, 1] with int64 labels.

    ``digits``: scikit-learn's 8x8 handwritten digits, stratified ``val_fraction`` split.
    ``mnist``: torchvision's MNIST from ``root`` with its own train/test partition (paper 001
    App. C.2 uses PyTorch's default partition); ``val_fraction`` and ``split_seed`` do not apply.
    """
    import torch

    if dataset == "digits":
        from sklearn.datasets import load_digits

        bunch = load_digits()
        X = (bunch.images / 16.0).astype(np.float32)[:, None]
        X_tr, X_va, y_tr, y_va = _split(X, bunch.target.astype(np.int64), val_fraction, split_seed)
        t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (X_tr, y_tr, X_va, y_va)]
        return Split(*t, n_classes=10)
    if dataset == "mnist":
        require_mnist(root)
        from torchvision.datasets import MNIST

        parts = []
        for train in (True, False):
            ds = MNIST(os.path.abspath(root), train=train, download=False)
            parts += [(ds.data.float() / 255.0).unsqueeze(1), ds.targets.long()]
        return Split(*parts, n_classes=10)
    raise ValueError(f"unknown image data set {dataset!r}; allowed: {list(IMAGES)}")
