"""The layers: the optimizer core and the simulated run loop import no Ray, MLflow, torch or
matplotlib (checked in a fresh interpreter, so no other test's imports leak in); no package of
``tuner`` imports one above it (core < loop < study < integrations < bench < app), and the study
imports neither Ray nor MLflow, not even inside a function."""

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import tuner.core
import tuner.loop

HEAVY = ("ray", "mlflow", "torch", "matplotlib")
ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
# tuner's packages from the bottom up; a module may import its own package's and those below
LAYERS = ("core", "loop", "study", "integrations", "bench", "app")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (relative imports made absolute)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "tuner" or len(parts) < 2 or parts[1] not in LAYERS:
        return None
    return LAYERS.index(parts[1])


def test_no_package_imports_one_above_it():
    wrong = []
    for path in sorted((ROOT / "tuner").rglob("*.py")):
        own = _layer(".".join(path.relative_to(ROOT).with_suffix("").parts))
        if own is None:
            continue
        wrong += [f"{path.relative_to(ROOT)} imports {m}" for m in sorted(_imports(path))
                  if (_layer(m) or 0) > own]
    assert not wrong, "\n".join(wrong)


def test_the_study_imports_neither_ray_nor_mlflow():
    files = sorted((ROOT / "tuner" / "study").glob("*.py"))
    assert any(p.name == "runner.py" for p in files)
    wrong = [f"{p.relative_to(ROOT)} imports {m}" for p in files for m in sorted(_imports(p))
             if m.split(".")[0] in ("ray", "mlflow") or m.startswith("tuner.integrations")]
    assert not wrong, "\n".join(wrong)


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


def test_a_study_driver_imports_no_mlflow():
    """MLflow (1.6 s to import) is the writer process's: the driver that ``tuner run`` builds
    imports it only to read an earlier study back from MLflow (``--from``)."""
    code = ("import sys\nfrom tuner.study.config import load_study\n"
            "from tuner.app.wiring import study_runner\n"
            f"study_runner(load_study({str(CONFIGS / 'svm.yaml')!r}))\n"
            "print('mlflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout


def test_a_study_of_your_own_function_runs_without_torch():
    """torch is the ``models`` extra: with it missing (an import of it fails), a study of the SVM
    or of a user's function is validated and its Ray and MLflow parts load; a torch built-in is
    a config error that names the extra."""
    code = (
        "import sys, importlib.util\n_find = importlib.util.find_spec\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'torch' else _find(name, *a)\n"
        "from tuner.study.config import load_study, ConfigError\n"
        f"load_study({str(CONFIGS / 'svm.yaml')!r})\n"
        "import tuner.app.wiring, tuner.integrations.ray.executor, "
        "tuner.integrations.mlflow.writer\n"
        "import tuner.integrations.ray.backend, tuner.study.runner, trainables.svm\n"
        "try:\n"
        f"    load_study({str(CONFIGS / 'cnn.yaml')!r})\n"
        "except ConfigError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "trainable: cnn is built on torch" in out.stdout and "tuner[models]" in out.stdout
