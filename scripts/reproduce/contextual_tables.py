"""The tables of docs/research/notes/contextual.md "A level of each context": cumulative regret and
re-tune queries per method, and paired differences, from several runs of reproduce_contextual.py
(the level methods from the first folder of each setting only: the final tree).

    python scripts/reproduce/contextual_tables.py \
        [docs/research/results/contextual/level-2026-11-26]
"""

import sys

import numpy as np
import pandas as pd

S = (
    sys.argv[1] if len(sys.argv) > 1 else "docs/research/results/contextual/level-2026-11-26"
).rstrip("/") + "/"
sets = {"multitask": (["f_mt", "mt_level60b", "mt_level60", "mt_fig4", "mt_peers60"], "T=150"),
        "digits": (["f_digits", "digits_30"], "T=600"),
        "breast_cancer": (["f_breast_cancer", "breast_cancer_30"], "T=600")}
LEVEL = {"cgp-ucb-level-mean", "cgp-ts-level-mean"}


def gather(dirs, fname):
    out = []
    for i, d in enumerate(dirs):
        x = pd.read_csv(S + d + "/" + fname)
        if i > 0:
            x = x[~x.method.isin(LEVEL)]  # the level methods from the final tree only
        out.append(x)
    return pd.concat(out)


for name, (dirs, T) in sets.items():
    r = gather(dirs, "results.csv")
    q = gather(dirs, "retune.csv")
    q["q"] = q.queries_to_99.fillna(31)
    p = r.pivot_table(index="run", columns="method", values=T)
    g = q.groupby("method").q
    tab = pd.DataFrame(
        {"regret": p.mean().round(2), "regret_se": (p.std() / np.sqrt(p.count())).round(2),
         "runs": p.count(),
         "reached": q.groupby("method").queries_to_99.apply(lambda s: s.notna().mean()).round(2),
         "median": g.median(), "mean": g.mean().round(1),
         "se": (g.std() / np.sqrt(g.count())).round(1)}
    )
    print("==", name, T)
    print(tab.sort_values("regret").to_string())
    pq = q.pivot_table(index=["run", "task"], columns="method", values="q")
    for a, b in [("cgp-ucb-level-mean", "cgp-ucb-shared-mean"),
                 ("cgp-ts-level-mean", "cgp-ts-shared"), ("cgp-ucb-level-mean", "gp-ucb-sdf"),
                 ("cgp-ts-level-mean", "gp-ts-sdf"), ("cgp-ucb-level-mean", "optuna-gp-warm"),
                 ("cgp-ucb-level-mean", "optuna-tpe-warm"), ("cgp-ts-level-mean", "optuna-gp-warm"),
                 ("cgp-ts-level-mean", "optuna-tpe-warm")]:
        if a in p and b in p:
            d = (p[a] - p[b]).dropna()
            e = (pq[a] - pq[b]).dropna()
            print(
                f"  {a} - {b}: regret {d.mean():+.2f} (se {d.std() / np.sqrt(len(d)):.2f}) better "
                f"{(d < 0).sum()}/{len(d)};  re-tune {e.mean():+.2f} (se "
                f"{e.std() / np.sqrt(len(e)):.2f}) better/worse {(e < 0).sum()}/{(e > 0).sum()}"
            )
    if name == "multitask":
        print(pq.groupby("task").mean().round(1).T.to_string())
