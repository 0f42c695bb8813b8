#!/bin/bash
# Where a study's defaults stand against every peer, over every harness file that holds them:
#   1. best or tied against every peer at H/4, H/2, H (W = 4 and 16)
#   2. not behind Optuna's GPSampler on the categorical, mixed and recorded-table problems
#   3. on every constrained problem at most half the best-scoring peer's trials over the limit,
#      at an equal or better score
# Run from the repository root, in the environment the README installs (with the bench extra):
#     bash scripts/studies/standing.sh            (--table: also every method's medians per problem)
# A later file replaces an earlier one's rows of the same (problem, W, method), so each list
# ends with the newest runs of a study's defaults; `FILE:mean=study` reads the `mean` rows of
# budget-mean-2026-11-29 (a study's defaults since that day) as the study's, and
# coverage-2026-11-29/study_budget_now.csv repeats some of them with every column.
set -eo pipefail
R=docs/research/results
S4="$R/coverage-2026-11-28/synthetic_w4/runs.csv $R/warp-auto-2026-11-28/synthetic_w4.csv
    $R/running-blend-2026-11-28/synthetic_w4_auto.csv $R/tail-or-copula-2026-11-28/synthetic_w4.csv
    $R/lean-design-2026-11-28/synthetic_w4.csv $R/upper-blend-2026-11-29/w4/runs.csv"
R4="$R/recorded/runs.csv $R/log-ei-2026-11-26/recorded/runs.csv $R/noise-floor-2026-11-27/recorded_w4/runs.csv
    $R/deadline-2026-11-27/recorded_w4/runs.csv $R/warp-auto-2026-11-28/recorded_w4.csv
    $R/tail-or-copula-2026-11-28/recorded_w4.csv $R/lean-design-2026-11-28/recorded_w4.csv
    $R/coverage-2026-11-28/recorded_syne_w4/runs.csv $R/coverage-2026-11-29/syne_recorded_w4.csv"
B4="$R/budget-tables-2026-11-28/runs_w4.csv $R/budget-tables-2026-11-28/runs_w4_optuna_gp.csv
    $R/budget-tables-2026-11-28/runs_w4_syne.csv $R/lean-design-2026-11-28/budget_tables_w4.csv
    $R/coverage-2026-11-29/budget_w4_peers.csv $R/coverage-2026-11-29/gpsampler_segment_budget_w4.csv
    $R/coverage-2026-11-29/study_mlp_budget_w4.csv"
S16="$R/w16-coverage-2026-11-27/fcnet_budget.csv $R/constraint-gp-2026-11-27/w16.csv
     $R/w16-seeds-2026-11-28/synthetic_w16.csv $R/upper-blend-2026-11-29/w16/runs.csv"
R16="$R/output-warp-2026-11-26/recorded_w16/runs.csv $R/deadline-2026-11-27/gpsampler_w16/runs.csv
     $R/until-result-2026-11-27/recorded_w16/runs.csv $R/tail-or-copula-2026-11-28/recorded_w16.csv
     $R/coverage-2026-11-29/syne_recorded_w16.csv $R/coverage-2026-11-29/nb201_w16_peers.csv"
B16="$R/budget-tables-2026-11-28/runs_w16.csv $R/w16-budget-2026-11-29/syne_w16.csv
     $R/lean-design-2026-11-28/fcnet_w16.csv $R/w16-budget-2026-11-29/gpsampler_w16_naval.csv
     $R/w16-budget-2026-11-29/gpsampler_w16_vehicle.csv $R/w16-budget-2026-11-29/gpsampler_w16_mlp4.csv
     $R/coverage-2026-11-29/study_mlp_budget_w16.csv"
NOW="$R/budget-mean-2026-11-29/runs.csv:mean=study $R/coverage-2026-11-29/study_budget_now.csv"
CAT="hpo-mixed hpo-mixed-budget nb201-cifar10 mlp-phoneme mlp-segment mlp-vehicle mlp-car mlp-australian
     fcnet-naval fcnet-parkinsons mlp-phoneme-budget mlp-segment-budget mlp-vehicle-budget mlp-car-budget
     mlp-australian-budget fcnet-naval-budget fcnet-parkinsons-budget"
B="python scripts/studies/best_or_tied.py --candidates study --seeds 20"
for W in 4 16; do
    if [ $W = 4 ]; then FILES="$S4 $R4 $B4 $NOW"; else FILES="$S16 $R16 $B16 $NOW"; fi
    echo "## W = $W: 1. best or tied against every peer"; $B $FILES --workers $W "$@"
    echo; echo "## W = $W: 2. against GPSampler on the categorical, mixed and recorded problems"
    $B $FILES --workers $W --peers optuna-gp --problems $CAT
    echo; echo "## W = $W: 3. trials over the limit against the best-scoring peer's"
    $B $FILES --workers $W --budget | sed -n '/problem | W | over/,$p'
    echo
done
