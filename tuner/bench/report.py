"""summary.md and the plots from runs.csv: medians and quartiles over seeds."""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from .metrics import FRACTIONS, quartiles
from .peers import METHODS, PEERS
from .problems import get_problem

Cell = tuple[str, int, str]     # (problem, workers, method)


def load_runs(path: Path) -> dict[Cell, list[dict[str, Any]]]:
    """runs.csv grouped by (problem, W, method), numbers parsed, curves as arrays."""
    cells: dict[Cell, list[dict[str, Any]]] = defaultdict(list)
    with path.open() as fh:
        for r in csv.DictReader(fh):
            row: dict[str, Any] = {}
            for k, v in r.items():
                if k in ("problem", "method"):
                    row[k] = v
                elif k == "curve":
                    row[k] = np.array([float(x) for x in v.split(";")])
                else:
                    row[k] = float(v) if v not in ("", "None") else math.nan
            cells[(row["problem"], int(row["workers"]), row["method"])].append(row)
    return cells


def fmt(v: float) -> str:
    if math.isnan(v):
        return "–"
    if math.isinf(v):
        return "none" if v < 0 else "never"
    return f"{v:.4g}"


def order(methods: set[str]) -> list[str]:
    return [m for m in METHODS if m in methods] + sorted(methods - set(METHODS))


def median_best(rows: list[dict[str, Any]], q: float) -> float:
    return quartiles(r[f"best_{q:g}"] for r in rows)[1]


def headline(cells: dict[Cell, list], workers: int) -> list[str]:
    """Per problem: median best feasible score at H/2 and H for every method, plus the median
    number of trials on infeasible configurations where a constraint applies."""
    problems = list(dict.fromkeys(p for p, w, _ in cells if w == workers))
    methods = order({m for p, w, m in cells if w == workers})
    out = ["| problem (f*) | " + " | ".join(methods) + " |", "|---" * (len(methods) + 1) + "|"]
    for p in problems:
        prob = get_problem(p)
        vals = {
            m: (median_best(cells[(p, workers, m)], 0.5), median_best(cells[(p, workers, m)], 1.0))
            for m in methods
            if (p, workers, m) in cells
        }
        top = max(v[1] for v in vals.values())
        row = [f"{p} ({fmt(prob.f_opt) if prob.f_opt is not None else '?'})"]
        for m in methods:
            if m not in vals:
                row.append("")
                continue
            half, full = vals[m]
            cell = f"{fmt(half)} / {'**' + fmt(full) + '**' if full == top else fmt(full)}"
            if prob.constraint is not None:
                v = np.median([r["infeasible_trials"] for r in cells[(p, workers, m)]])
                n = np.median([r["trials"] for r in cells[(p, workers, m)]])
                cell += f" ({v:.0f}/{n:.0f})"
            row.append(cell)
        out.append("| " + " | ".join(row) + " |")
    return out


def _winner(a: float, b: float) -> str:
    """"project" if a is better, "peer" if b is, "tie" within 0.1 % (or both without a feasible
    result)."""
    if a == b or (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-3 * (abs(a) + abs(b))):
        return "tie"
    return "project" if a > b else "peer"


def wins(cells: dict[Cell, list]) -> list[str]:
    """Per (problem, W, horizon fraction): the default and the best median among this project's
    methods against the best median among the peers (Optuna, Syne Tune)."""
    out = [
        "| problem | W | at | default (tuner) | best of this project | best peer | default vs peer "
        "| best project vs peer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    tally: dict[tuple[str, float], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p, w in dict.fromkeys((p, w) for p, w, _ in cells):
        for q in FRACTIONS:
            med = {m: median_best(cells[(p, w, m)], q) for m in METHODS if (p, w, m) in cells}
            ours = {m: v for m, v in med.items() if m not in PEERS and m != "random"}
            peers = {m: v for m, v in med.items() if m in PEERS}
            if not ours or not peers or "tuner" not in med:
                continue
            mo, mp = max(ours, key=ours.get), max(peers, key=peers.get)
            a, b = _winner(med["tuner"], peers[mp]), _winner(ours[mo], peers[mp])
            tally[("default", q)][a] += 1
            tally[("best of this project", q)][b] += 1
            bold = lambda x: f"**{x}**" if x == "peer" else x
            out.append(f"| {p} | {w} | {q:g} H | {fmt(med['tuner'])} | {mo} {fmt(ours[mo])} | "
                       f"{mp} {fmt(peers[mp])} | {bold(a)} | {bold(b)} |")
    out.append("")
    out += ["Tally over the (problem, W) pairs:", ""]
    for (side, q), t in sorted(tally.items(), key=lambda kv: (kv[0][0] != "default", kv[0][1])):
        out.append(f"* {side} vs best peer at {q:g} H: project {t['project']}, peer {t['peer']}, "
                   f"tie {t['tie']}")
    return out


def details(cells: dict[Cell, list], p: str, w: int) -> list[str]:
    prob = get_problem(p)
    out = [
        f"#### {p}, W = {w}: horizon "
        f"{fmt(cells[next(c for c in cells if c[:2] == (p, w))][0]['horizon'])} s, "
        f"f* = {fmt(prob.f_opt) if prob.f_opt is not None else '?'}, target {fmt(prob.target())}\n",
        "| method | seeds | trials | best @ H/4 | best @ H/2 | best @ H | time to target (reached) "
        "| infeasible trials | infeasible worker-s (share) | suggest ms |",
        "|---" * 10 + "|",
    ]
    for m in order({c[2] for c in cells if c[:2] == (p, w)}):
        rows = cells[(p, w, m)]
        best = []
        for q in FRACTIONS:
            lo, med, hi = quartiles(r[f"best_{q:g}"] for r in rows)
            best.append(f"{fmt(med)} [{fmt(lo)}, {fmt(hi)}]")
        ttt = np.array([r["time_to_target"] for r in rows])
        reached = int(np.isfinite(ttt).sum())
        inf_s = np.median([r["infeasible_seconds"] for r in rows])
        share = np.median([r["infeasible_seconds"] / max(r["worker_seconds"], 1e-12) for r in rows])
        out.append(
            f"| {m} | {len(rows)} | {np.median([r['trials'] for r in rows]):.0f} | "
            + " | ".join(best)
            + f" | {fmt(float(np.median(ttt)))} ({reached}/{len(rows)}) "
            f"| {np.median([r['infeasible_trials'] for r in rows]):.0f} | {inf_s:.0f} "
            f"({100 * share:.0f} %) "
            f"| {np.median([r['suggest_ms_median'] for r in rows]):.1f} |"
        )
    return out


def problem_table(names: list[str]) -> list[str]:
    out = ["| problem | dims | f* (best feasible) | target | constraint | noise sd | note |",
           "|---|---|---|---|---|---|---|"]
    for n in names:
        p = get_problem(n)
        c = p.constraint
        cons = "" if c is None else (f"mean run time <= {c['limit']:g} s" if p.budget else "g(x) "
                                                                                           "<= 0")
        out.append(f"| {n} | {len(p.space)} | {fmt(p.f_opt) if p.f_opt is not None else '?'} | "
                   f"{fmt(p.target())} | {cons} | {p.noise_std:g} | {p.note} |")
    return out


def write_report(out: Path) -> Path:
    """Write summary.md and the plots for the runs in ``out/runs.csv``."""
    cells = load_runs(out / "runs.csv")
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    problems = list(dict.fromkeys(p for p, _, _ in cells))
    workers = sorted({w for _, w, _ in cells})
    seeds = sorted({len(v) for v in cells.values()})
    spent = sum(s["seconds"] for s in meta.get("sessions", []))
    cpu = sum(r["run_seconds"] for rows in cells.values() for r in rows)
    md = ["# Side-by-side benchmark: this project against Optuna, Syne Tune and random search\n",
          f"{sum(len(v) for v in cells.values())} runs; seeds per (problem, W, method): "
          f"{', '.join(map(str, seeds))}; W in {workers}; one process; the runs took "
          f"{cpu / 60:.0f} min in all (sum of per-run wall times; {spent / 60:.0f} min in the "
          f"sessions that recorded their span). Versions: {meta.get('versions', {})}.\n",
          "Scores are noise-free and maximized; *best feasible* = best noise-free score among "
          "completed trials whose configuration is feasible (a run-time budget: its mean run time "
          "is within the budget). Medians over seeds, [25 %, 75 %] quartiles; a run with nothing "
          "feasible yet counts as \"none\" (-inf).\n",
          "## Problems\n", *problem_table(problems), ""]
    for w in workers:
        md += [f"## Headline, W = {w}: median best feasible score at H/2 / H "
               "(bold: best at H), constrained problems: (median trials on infeasible "
               "configurations / median trials)\n", *headline(cells, w), ""]
    md += ["## This project against the peers\n",
           "Median best feasible score of the default (`tuner`) and the best median among this "
           "project's GP methods (tuner, gp-ucb, gp-ts-sdf, asy-ts, tuner-cbo), each against the "
           "best median among the peers (optuna-tpe, optuna-gp, syne-botorch). Picking the best "
           "of several methods after the fact flatters either side; the default column does not. "
           "A tie is within 0.1 % of the scores' magnitude (or neither has a feasible result).\n",
           *wins(cells), ""]
    md += ["## Details per problem\n"]
    for p in problems:
        for w in workers:
            if any(c[:2] == (p, w) for c in cells):
                md += details(cells, p, w) + [""]
    from .plots import plot_problem

    md += ["## Plots\n"]
    for p in problems:
        path = plot_problem(cells, p, out)
        md.append(f"![{p}]({path.name})")
    (out / "summary.md").write_text("\n".join(md) + "\n")
    return out / "summary.md"
