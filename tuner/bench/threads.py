"""One BLAS thread per process, set before numpy is imported: the benchmarks and reproductions
run several processes at once (a pool, or a shared machine), and each is one stream of work.

    import tuner.bench.threads  # noqa: F401  (first, before numpy)
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
