"""The SVM, logistic-regression and CNN trainables on real scikit-learn data: they learn, bad
settings do worse, runs are reproducible, injected delays happen, options are checked."""

import struct
import time

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from trainables import TRAINABLES, get_trainable, validate_options
from trainables.data import MNIST_FILES
from trainables.delay import sample_delay
from tuner import SearchSpace

FAST_LOGREG = {"epochs": 60}
FAST_CNN = {"epochs": 40}


def test_contract_spaces_and_default_options():
    assert {"svm", "logreg", "cnn"} <= set(TRAINABLES)
    for name, t in TRAINABLES.items():
        assert t.name == name and t.objective == "accuracy"
        space = SearchSpace.from_dict(t.space)  # the tuner's plain format
        resolved = validate_options(name, None)
        assert set(resolved) == set(t.options)
        assert resolved["delay"] == "none"
        # the centre of the default space is a valid configuration
        assert t.check_config(space.decode(np.full(space.dim, 0.5))).keys() == t.space.keys()
    svm, lr, cnn = TRAINABLES["svm"].space, TRAINABLES["logreg"].space, TRAINABLES["cnn"].space
    assert (svm["C"]["low"], svm["C"]["high"], svm["gamma"]["low"], svm["gamma"]["high"]) \
        == (1e-4, 100, 1e-4, 10)
    assert (lr["batch_size"]["low"], lr["batch_size"]["high"]) == (32, 128)
    assert (cnn["batch_size"]["low"], cnn["batch_size"]["high"]) == (128, 512)
    for space in (lr, cnn):
        assert (space["lr"]["low"], space["lr"]["high"]) == (1e-6, 1.0)
        assert (space["lr_decay"]["low"], space["lr_decay"]["high"]) == (1e-6, 1.0)


def test_svm_learns_breast_cancer_and_absurd_settings_do_worse():
    svm = get_trainable("svm")
    good = svm({"C": 10.0, "gamma": 0.01})
    bad = svm({"C": 1e-4, "gamma": 1e-4})
    assert set(good) >= {"accuracy", "train_time", "injected_delay"}
    assert good["accuracy"] > 0.9
    assert bad["accuracy"] < good["accuracy"] - 0.2
    assert good["train_time"] > 0 and good["injected_delay"] == 0.0


def test_logreg_learns_breast_cancer_and_tiny_learning_rate_does_not():
    logreg = get_trainable("logreg")
    good = logreg({"batch_size": 32, "lr": 0.1, "lr_decay": 1e-3}, FAST_LOGREG)
    tiny = logreg({"batch_size": 32, "lr": 1e-6, "lr_decay": 1e-6}, FAST_LOGREG)
    assert good["accuracy"] > 0.9
    assert tiny["accuracy"] < good["accuracy"] - 0.2
    assert good["train_time"] > 0


def test_lr_decay_slows_learning():
    """lr_t = lr / (1 + decay t): with decay 1 a small learning rate dies out before the model
    fits; with a negligible decay the same learning rate gets there."""
    logreg = get_trainable("logreg")

    def mean_accuracy(decay):
        config = {"batch_size": 32, "lr": 1e-2, "lr_decay": decay}
        return np.mean([logreg(config, FAST_LOGREG, seed)["accuracy"] for seed in range(3)])

    kept, slow = mean_accuracy(1e-6), mean_accuracy(1.0)
    assert kept > 0.9
    assert slow < kept - 0.1


def test_cnn_learns_digits_and_same_seed_reproduces():
    cnn = get_trainable("cnn")
    config = {"batch_size": 512, "lr": 0.01, "lr_decay": 1e-4}
    first = cnn(config, FAST_CNN, seed=3)
    again = cnn(config, FAST_CNN, seed=3)
    other = cnn(config, FAST_CNN, seed=4)
    tiny = cnn({"batch_size": 512, "lr": 1e-6, "lr_decay": 1e-6}, FAST_CNN, seed=3)
    assert first["accuracy"] > 0.75  # 10 classes: chance is 0.1
    assert tiny["accuracy"] < 0.3
    assert again["accuracy"] == first["accuracy"]
    assert other["accuracy"] != first["accuracy"]  # the seed drives initialization and shuffling


def test_logreg_same_seed_reproduces_and_threads_are_restored():
    logreg = get_trainable("logreg")
    config = {"batch_size": 40, "lr": 0.05, "lr_decay": 1e-2}
    threads_before = torch.get_num_threads()
    options = {"epochs": 20, "threads": 2 if threads_before == 1 else 1}
    a = logreg(config, options, seed=7)
    b = logreg(config, options, seed=7)
    assert a["accuracy"] == b["accuracy"]
    assert torch.get_num_threads() == threads_before


def test_fixed_delay_is_slept_after_training_and_reported():
    start = time.perf_counter()
    out = get_trainable("svm")({"C": 1.0, "gamma": 0.03},
                               {"delay": "fixed", "delay_mean": 3, "delay_unit": 0.1})
    elapsed = time.perf_counter() - start
    assert out["injected_delay"] == pytest.approx(0.3)
    assert out["train_time"] < out["injected_delay"]  # the delay is not part of the fit time
    assert elapsed >= out["injected_delay"] + out["train_time"]


def test_poisson_delay_reproduces_paper_setting():
    """Poisson(mu) delay units times the unit's seconds: same seed, same delay; mean mu."""
    delays = np.array([sample_delay("poisson", 10.0, 0.5, seed) for seed in range(400)])
    assert sample_delay("poisson", 10.0, 0.5, 11) == delays[11]
    np.testing.assert_allclose(delays / 0.5, np.round(delays / 0.5))
    assert len(np.unique(delays)) > 5
    assert delays.mean() == pytest.approx(5.0, abs=0.5)


@pytest.mark.slow
def test_trainable_runs_in_a_ray_task_and_the_delay_counts_in_its_time(ray_session):
    ray = ray_session
    trainable = get_trainable("cnn")
    options = validate_options("cnn", {"epochs": 2, "delay": "fixed", "delay_mean": 2,
                                       "delay_unit": 0.25})

    @ray.remote(num_cpus=1)
    def trial(config, options, seed):
        return trainable(config, options, seed)

    config = {"batch_size": 256, "lr": 0.01, "lr_decay": 1e-3}
    start = time.perf_counter()
    out = ray.get(trial.remote(config, options, 0))
    start_to_result = time.perf_counter() - start
    assert out["injected_delay"] == pytest.approx(0.5)
    assert start_to_result >= out["injected_delay"] + out["train_time"]
    assert out["accuracy"] == trainable(config, {**options, "delay": "none"}, 0)["accuracy"]


def _write_idx(path, array: np.ndarray) -> None:
    """IDX format (MNIST's): magic (0, 0, 0x08 = ubyte, ndim), big-endian dims, raw bytes."""
    with open(path, "wb") as f:
        f.write(struct.pack(">BBBB", 0, 0, 0x08, array.ndim))
        f.write(struct.pack(f">{array.ndim}I", *array.shape))
        f.write(np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def test_cnn_reads_mnist_files_through_torchvision(tmp_path):
    """MNIST-format files (28x28 uint8 IDX) written from scikit-learn's digits, upscaled 3x
    and padded: the CNN reads them with torchvision and learns on 28x28 inputs."""
    digits = load_digits()
    images = np.pad(np.kron(digits.images * (255 / 16), np.ones((3, 3))), ((0, 0), (2, 2), (2, 2)))
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    n = 1300
    for prefix, sl in (("train", slice(0, n)), ("t10k", slice(n, None))):
        _write_idx(raw / f"{prefix}-images-idx3-ubyte", images[sl].round())
        _write_idx(raw / f"{prefix}-labels-idx1-ubyte", digits.target[sl])
    out = get_trainable("cnn")({"batch_size": 128, "lr": 0.01, "lr_decay": 1e-4},
                               {"dataset": "mnist", "mnist_root": str(tmp_path), "epochs": 10})
    assert out["accuracy"] > 0.6  # chance is 0.1


def test_mnist_without_files_names_path_and_files(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        get_trainable("cnn")({"batch_size": 128, "lr": 0.01, "lr_decay": 1e-4},
                             {"dataset": "mnist", "mnist_root": str(tmp_path)})
    message = str(err.value)
    assert str(tmp_path / "MNIST" / "raw") in message
    assert all(f in message for f in MNIST_FILES)


@pytest.mark.parametrize("name, options, field", [
    ("logreg", {"epoch": 10}, "epoch"),
    ("logreg", {"epochs": 0}, "epochs"),
    ("svm", {"threads": 2}, "threads"),  # SVC runs on one thread: no such option
    ("cnn", {"dataset": "cifar10"}, "dataset"),
    ("cnn", {"delay": "gamma"}, "delay"),
    ("cnn", {"delay_unit": 0}, "delay_unit"),
    ("logreg", {"val_fraction": 1.0}, "val_fraction"),
    ("logreg", {"standardize": "yes"}, "standardize"),
])
def test_bad_options_name_the_field(name, options, field):
    with pytest.raises(ValueError, match=f"'{field}'"):
        validate_options(name, options)
    with pytest.raises(ValueError, match=f"'{field}'"):
        get_trainable(name)(dict.fromkeys(TRAINABLES[name].space, 1), options)


def test_bad_names_and_configs_are_explained():
    with pytest.raises(ValueError, match=r"'xgboost'.*allowed: \[.*'cnn', 'logreg'.*'svm'"):
        get_trainable("xgboost")
    logreg = get_trainable("logreg")
    with pytest.raises(ValueError, match="lr_decay"):
        logreg({"batch_size": 32, "lr": 0.1})
    with pytest.raises(ValueError, match="'batch_size'.*whole number"):
        logreg({"batch_size": 32.5, "lr": 0.1, "lr_decay": 0.1})
    with pytest.raises(ValueError, match="'C'"):
        get_trainable("svm")({"C": -1.0, "gamma": 0.1})
    with pytest.raises(ValueError, match="seed"):
        logreg({"batch_size": 32, "lr": 0.1, "lr_decay": 0.1}, seed=-1)
