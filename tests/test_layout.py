"""The layers: the optimizer core and the simulated run loop import no Ray, MLflow, torch or
matplotlib (checked in a fresh interpreter, so no other test's imports leak in)."""

import pkgutil
import subprocess
import sys

import tuner.core
import tuner.loop

HEAVY = ("ray", "mlflow", "torch", "matplotlib")


def test_core_and_simulation_import_no_heavy_package():
    mods = ["tuner"] + [f"{pkg.__name__}.{m.name}" for pkg in (tuner.core, tuner.loop)
                        for m in pkgutil.iter_modules(pkg.__path__)]
    assert "tuner.core.optimizer" in mods and "tuner.loop.simulator" in mods
    code = ("import importlib, sys\n"
            f"for m in {mods!r}: importlib.import_module(m)\n"
            f"print(sorted(h for h in {HEAVY!r} if h in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
