"""Command line: ``tuner run [CONFIG]`` (a study on Ray, logged to MLflow),
``tuner simulate CONFIG`` (a simulated study on a simulated clock) and ``tuner bench`` (the
side-by-side benchmark, ``tuner.bench.compare``)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence

from tuner.study.defaults import DEFAULT_STUDY
from tuner.study.lock import StudyBusy
from tuner.study.disk import StudyUnwritable
from tuner.study.schema import ConfigError
from tuner.study.config import load_study
from tuner.study.executor import TrainableFailed


def _simulate(args: argparse.Namespace) -> int:
    from tuner.app.simulation import simulate_study

    return simulate_study(args)


def _run(args: argparse.Namespace) -> int:
    from tuner.app.wiring import study_runner

    overrides = {k: getattr(args, k) for k in ("trials", "max_concurrent", "wall_clock_limit",
                                               "trial_timeout", "seed", "budget", "address",
                                               "tracking_uri", "algorithm", "output", "trainable",
                                               "warm_start")}
    overrides["context"] = context_pairs(args.context)
    cfg = load_study(args.config or DEFAULT_STUDY, overrides)
    result = study_runner(cfg, resume=args.resume, fresh=args.fresh).run()
    if result.status == "FAILED":
        print(f"tuner: study stopped: {result.diagnosis}. Fix it and run again with --fresh "
              f"(the failed trials are in {result.directory}/trials.csv)", file=sys.stderr)
        return 2
    if result.status != "FINISHED":
        return 130
    if result.diagnosis is not None:
        print(f"tuner: no trial finished: {result.diagnosis}", file=sys.stderr)
        return 1
    return 0


def context_pairs(pairs: Sequence[str] | None) -> dict[str, Any] | None:
    """``--context n_rows=120000 --context version=2026-11`` as a mapping (numbers where they
    read as numbers); None without any."""
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--context: expected KEY=VALUE, got {pair!r}")
        value: Any = text.strip()
        for kind in (int, float):
            try:
                value = kind(value)
                break
            except ValueError:
                continue
        out[key.strip()] = value
    return out


def _studies(args: argparse.Namespace) -> int:
    from tuner.app import studies

    try:
        if args.command != "list":
            folder = studies.find(args.output, args.study)
            if folder.warning is not None:
                print(folder.warning, file=sys.stderr)
        if args.command == "list":
            print(studies.list_text(args.output))
        elif args.command == "plot":
            paths = studies.plot(args.output, args.study)
            print(
                "\n".join(map(str, paths)) if paths else f"study {args.study}: no trial ended yet"
            )
        elif args.command == "show":
            print(studies.csv_text(args.output, args.study) if args.csv else
                  studies.show_text(args.output, args.study, None if args.all else 10))
        else:
            print(studies.best_text(folder, args.json))
            if folder.best() is None:
                return 1                       # nothing to use: scripts must not go on
    except (studies.StudyNotFound, studies.StudyUnreadable) as exc:
        print(f"tuner: {exc}", file=sys.stderr)
        return 2
    return 0


def _add_run(sub: Any) -> None:
    """The ``tuner run`` command and its flags."""
    r = sub.add_parser("run", help="run a study on Ray (local or a cluster), every trial in MLflow")
    r.add_argument("config", nargs="?", help="study YAML, e.g. configs/svm.yaml (default: the "
                   f"built-in study: {DEFAULT_STUDY['trainable']} with a CPU-time budget)")
    r.add_argument("--trainable", help="override trainable: a built-in name, or your own "
                   "function as module:function (the config then needs space and objective.metric)")
    r.add_argument("--trials", type=int, help="override run.trials")
    r.add_argument("--max-concurrent", type=int, help="override run.max_concurrent")
    r.add_argument("--wall-clock-limit", type=float, help="override run.wall_clock_limit (seconds)")
    r.add_argument("--trial-timeout", type=float, help="override run.trial_timeout (seconds)")
    r.add_argument("--budget", help="override budget.limit: seconds per trial, or a multiple of "
                   "the reference run measured at start-up, e.g. 1.5x")
    r.add_argument("--address", help="Ray cluster: auto, host:6379 or ray://host:10001 "
                   "(default: start a local Ray)")
    r.add_argument("--tracking-uri", help="MLflow tracking URI (default sqlite:///mlflow.db)")
    r.add_argument("--algorithm", help="override optimizer.algorithm")
    r.add_argument("--seed", type=int, help="override run.seed")
    r.add_argument("--output", help="folder for study states and tables (default tuner_runs)")
    r.add_argument("--context", action="append", metavar="KEY=VALUE",
                   help="this study's context, e.g. --context n_rows=120000 (repeat for more keys; "
                   "added to the config's context)")
    r.add_argument("--from", dest="warm_start", action="append", metavar="STUDY",
                   help="learn from an earlier study of the same trainable and space: its name "
                   "(folder under --output, or its MLflow experiment) or folder; repeat for more")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true", help="continue the study from its saved state")
    g.add_argument("--fresh", action="store_true",
                   help="start over (an existing study folder is kept under a new name)")
    r.set_defaults(func=_run)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tuner", description=(
        "Asynchronous, budget-aware hyperparameter tuning on Ray, every trial in MLflow. "
        "tuner run: a study; tuner show/best/plot/list: its results; tuner simulate: a simulated "
        "study; tuner bench: the benchmark against Optuna, Syne Tune and random search."))
    sub = p.add_subparsers(dest="command", required=True)
    _add_run(sub)
    s = sub.add_parser("simulate", help="run a simulated study (virtual workers, simulated clock)")
    s.add_argument("config", help="study YAML with a simulation section, e.g. "
                                  "configs/synthetic.yaml")
    s.add_argument("--algorithm", help="override optimizer.algorithm")
    s.add_argument("--trials", type=int, help="override simulation.trials")
    s.add_argument("--workers", type=int, help="override simulation.workers")
    s.add_argument("--seed", type=int, help="override the seeds")
    s.add_argument("--out", default="tuner_runs", help="output folder (default: tuner_runs)")
    s.set_defaults(func=_simulate)
    for name, text in (
        ("list", "the studies in an output folder, with their best results"),
        ("show", "one study: its best trials, the ones that did not finish, the best"),
        ("best", "one study's best trial (best.yaml; --json for JSON)"),
        (
            "plot",
            "one study's plots: score against each setting, parallel "
            "coordinates, importance, trials on workers (PNG files in its folder)",
        ),
    ):
        c = sub.add_parser(name, help=text)
        if name != "list":
            c.add_argument("study", help="the study's name (its folder under --output)")
        if name == "best":
            c.add_argument("--json", action="store_true", help="print JSON instead of YAML "
                           "(exit code 1 when no trial finished)")
        if name == "show":
            c.add_argument(
                "--all", action="store_true", help="every finished trial, not the top 10"
            )
            c.add_argument("--csv", action="store_true", help="every trial as CSV (trials.csv)")
        c.add_argument("--output", default="tuner_runs", help="output folder (default: tuner_runs)")
        c.set_defaults(func=_studies)
    # listed for --help; main() hands everything after "bench" to tuner.bench.compare
    sub.add_parser(
        "bench",
        help="the side-by-side benchmark against Optuna, Syne Tune and random "
        "search on one simulated worker pool (tuner.bench.compare; try --quick, --help); "
        "'tuner bench curves': the learning-curve benchmark (tuner.bench.curves)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["bench", "curves"]:
        from tuner.bench.curves import main as curves

        curves(argv[2:])
        return 0
    if argv[:1] == ["bench"]:
        from tuner.bench.compare import main as bench

        bench(argv[1:])
        return 0
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:      # `tuner show STUDY | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no error at exit
        return 0
    except StudyBusy as exc:
        print(f"tuner: {exc}", file=sys.stderr)
        return 2
    except ConfigError as exc:
        print(f"tuner: configuration error: {exc}", file=sys.stderr)
        return 2
    except TrainableFailed as exc:
        print(f"tuner: {exc}", file=sys.stderr)
        return 2
    except StudyUnwritable as exc:     # a full disk, a read-only folder
        print(f"tuner: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("tuner: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
