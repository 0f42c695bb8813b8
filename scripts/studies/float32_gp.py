"""Is float32 safe for the GP's factor?  (where it is, the suggestions could be faster).

Runs the default optimizer on a harness problem for n trials (simulated pool), takes its fitted
objective GP (the usable results and the hyperparameters in force), and computes the posterior
at 1 152 fresh candidates twice: the Cholesky factor, solves and products in float64 (as the
product does) and in float32 (LAPACK's spotrf / strsm through scipy).  Reports whether the
float32 factorization succeeds, the largest error of sigma(x) and mu(x) (in units of the
kernel's amplitude and of the targets' [0, 1] range), whether the UCB argmax over the candidates
moves, and the bytes the factor takes in each precision.

    python scripts/studies/float32_gp.py --problems hartmann6 hpo-mixed --n 500 2000
"""
from __future__ import annotations

import argparse

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular

from tuner.bench.problems import PROBLEMS
from tuner import Optimizer
from tuner.core.maximize import candidate_set
from tuner.loop.simulator import Fixed, simulate


def posterior(K: np.ndarray, Ks: np.ndarray, kss: np.ndarray, y: np.ndarray, dtype) -> tuple:
    L = cholesky(K.astype(dtype), lower=True, check_finite=False)
    alpha = cho_solve((L, True), y.astype(dtype), check_finite=False)
    V = solve_triangular(L, Ks.astype(dtype), lower=True, check_finite=False)
    mean = Ks.astype(dtype).T @ alpha
    var = kss.astype(dtype) - np.einsum("ij,ij->j", V, V)
    return mean.astype(float), np.sqrt(np.maximum(var.astype(float), 0.0)), L.nbytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", nargs="*", default=["hartmann6", "hpo-mixed"])
    ap.add_argument("--n", nargs="*", type=int, default=[500, 2000])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("| problem | n | noise / amplitude | float32 Cholesky | max sigma error / sqrt(a) "
          "| max mean error (target range 1) | UCB argmax moved | factor MB (64 / 32) |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.problems:
        problem = PROBLEMS[name]()
        for n in args.n:
            opt = Optimizer(problem.space, seed=args.seed, exact_until=None)
            simulate(opt, problem.f, Fixed(1.0), n, workers=4, noise_std=problem.noise_std,
                     seed=args.seed)
            gp = opt.objective.gp_done
            ids = set(opt.objective.done_ids)
            done = [tr for tr in opt.trials if tr.trial_id in ids]
            X = np.vstack([tr.x for tr in done])
            y = opt.scale.targets(done)
            h = gp.hyper
            C = candidate_set(opt.space, np.random.default_rng(args.seed), 1024,
                              incumbents=X[np.argsort(-y)[:5]], n_local=128)
            K = gp.k(X, X) + h.noise * np.eye(len(X))
            Ks, kss = gp.k(X, C), np.full(len(C), h.amplitude)
            m64, s64, b64 = posterior(K, Ks, kss, y, np.float64)
            try:
                m32, s32, b32 = posterior(K, Ks, kss, y, np.float32)
            except np.linalg.LinAlgError:
                print(f"| {name} | {len(X)} | {h.noise / h.amplitude:.1e} | fails | - | - | - | "
                      f"{b64 / 1e6:.1f} / - |")
                continue
            sig_err = float(np.max(np.abs(s32 - s64)) / np.sqrt(h.amplitude))
            mean_err = float(np.max(np.abs(m32 - m64)))
            moved = int(np.argmax(m32 + s32)) != int(np.argmax(m64 + s64))
            print(
                f"| {name} | {len(X)} | {h.noise / h.amplitude:.1e} | ok | {sig_err:.2e} | "
                f"{mean_err:.2e} | {'yes' if moved else 'no'} | {b64 / 1e6:.1f} / {b32 / 1e6:.1f} |"
            )


if __name__ == "__main__":
    main()
