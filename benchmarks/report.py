"""Tables and plots from runs.csv (placeholder until the report is written)."""
from pathlib import Path


def write_report(out: Path) -> None:
    pass
