"""The benchmark harness behind `tuner bench` (the `bench` extra): simulated worker pools, the
problems, the peers (Optuna, Syne Tune, Ray Tune), metrics and reports.  Studies and paper
reproductions that use it live under scripts/."""
