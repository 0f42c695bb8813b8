"""A real ``mlflow server`` process for tests (started, killed and restarted on one port)."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``mlflow server`` on the sqlite store ``db``, serving artifacts from ``root``."""

    def __init__(self, root: Path, port: int, db: Path):
        self.root, self.port, self.db = root, port, db
        self.uri = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self, timeout: float = 120.0) -> None:
        self.starts += 1
        err = self.root / f"server-{self.starts}.err"
        cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1",
               "--port", str(self.port), "--workers", "1",
               "--backend-store-uri", f"sqlite:///{self.db}",
               "--artifacts-destination", str(self.root / "artifacts")]
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no job workers
        with open(err, "w") as fh:
            self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=fh, stderr=fh,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"mlflow server exited with {self.proc.returncode}:\n{err.read_text()}")
            try:
                with urllib.request.urlopen(f"{self.uri}/health", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.kill()
        pytest.fail(f"mlflow server did not answer /health within {timeout} s:\n{err.read_text()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)   # the server and its uvicorn worker
            self.proc.wait()
        self.proc = None
