"""MLflow sqlite stores for tests: a copy of one store whose tables exist.  Creating a store's
tables (MLflow's schema migrations) takes 3-8 s of CPU on 2 cores; done once per test process,
each test gets a copy in its own folder.  A test about a store the study creates itself uses a
path with no file there."""

import atexit
import shutil
import sqlite3
import tempfile
from pathlib import Path

_template: Path | None = None


def _migrated() -> Path:
    global _template
    if _template is None:
        from mlflow.tracking import MlflowClient

        root = Path(tempfile.mkdtemp(prefix="tuner-test-store-"))
        atexit.register(shutil.rmtree, root, True)
        MlflowClient(f"sqlite:///{root / 'mlflow.db'}").search_experiments()
        _template = root / "mlflow.db"
    return _template


def sqlite_store(directory: Path, name: str = "mlflow.db") -> str:
    """The URI of ``directory/name``, a store with MLflow's tables; a store already there is
    kept as it is (a test that builds its config twice keeps its runs)."""
    target = Path(directory) / name
    if not target.exists():
        with sqlite3.connect(_migrated()) as src, sqlite3.connect(target) as dst:
            src.backup(dst)
    return f"sqlite:///{target}"
