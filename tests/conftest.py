"""Shared fixtures: one local Ray instance for the whole test session (Ray takes seconds to
start), shut down at the end; CPU-burning processes for tests on a busy machine; a script of
``scripts/`` imported as a module."""

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

import pytest

ROOT = Path(__file__).resolve().parents[1]


def optimizer(space: Any, base: Mapping[str, Any] | None = None, **kw: Any) -> Any:
    """An Optimizer with settings and research switches given by name, flat, as the harness's
    variants give them (``base``: e.g. ``PAPER_EXACT``, then ``kw``): the switches go in as
    ``research=``, the rest (settings, ``clock``, ``domain``...) as keywords."""
    from tuner import Optimizer
    from tuner.core.research import GROUP_OF

    from tuner.core.settings import by_name

    flat = {**by_name(base or {}), **by_name(kw)}
    research = {k: flat.pop(k) for k in list(flat) if k in GROUP_OF}
    return Optimizer(space, research=research, **flat)


def load_script(path: str) -> ModuleType:
    """The script at ``path`` (relative to the repository) imported as a module, without
    running its ``__main__`` part: scripts are run as files, not installed."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module          # pickled by name in a process pool
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def ray_session():
    import ray

    from tuner.integrations.ray.executor import local_ray_config

    ray.init(address="local", num_cpus=2, include_dashboard=False, ignore_reinit_error=True,
             log_to_driver=False, configure_logging=False, _system_config=local_ray_config(2))
    yield ray
    ray.shutdown()


@pytest.fixture
def busy_machine():
    """``busy_machine(n)`` starts n processes that each keep a core busy, at this process's own
    priority; the fixture stops them (by PID) when the test ends."""
    procs: list[subprocess.Popen] = []

    def start(n: int) -> list[int]:
        procs.extend(subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n))
        return [p.pid for p in procs]

    yield start
    for p in procs:
        p.kill()
        p.wait(timeout=30)
