"""The layers: the optimizer core and the simulated run loop import no Ray, MLflow, torch or
matplotlib (checked in a fresh interpreter, so no other test's imports leak in)."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import tuner.core
import tuner.loop

HEAVY = ("ray", "mlflow", "torch", "matplotlib")
CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def test_core_and_simulation_import_no_heavy_package():
    mods = ["tuner"] + [f"{pkg.__name__}.{m.name}" for pkg in (tuner.core, tuner.loop)
                        for m in pkgutil.iter_modules(pkg.__path__)]
    assert "tuner.core.optimizer" in mods and "tuner.loop.simulator" in mods
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            f"print(sorted(h for h in {HEAVY!r} if h in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_command_line_help_loads_no_scientific_stack():
    """`tuner --help` answers at once: building the parser imports no scipy, Ray, MLflow,
    torch or matplotlib (they load when a command needs them)."""
    code = ("import sys\nfrom tuner.app.cli import build_parser\nbuild_parser()\n"
            f"print(sorted(h for h in {('scipy', *HEAVY)!r} if h in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_validating_a_config_imports_no_torch():
    configs = [str(CONFIGS / f"{n}.yaml") for n in ("svm", "cnn", "logreg")]
    code = ("import sys\nfrom tuner.study.config import load_study\n"
            f"for c in {configs!r}: load_study(c)\n"
            "print(sorted(h for h in ('torch', 'ray', 'mlflow') if h in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
