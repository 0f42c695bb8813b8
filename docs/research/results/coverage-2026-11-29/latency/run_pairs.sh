#!/bin/bash
# Suggestion latency of the default at issue 20's start against today's study defaults, one
# process per case, alternating, three rounds (what latency/pairs.log holds):
#   git worktree add /tmp/issue20-start 6a5ed16^
#   bash run_pairs.sh /tmp/issue20-start "$PWD/../../../.." > pairs.log      (from this folder)
# OLD and NEW are source trees; the venv's python imports `tuner` from PYTHONPATH.
OLD=$1; NEW=$2; HERE=$(cd "$(dirname "$0")" && pwd)
S=$(cd /tmp && PYTHONPATH=$NEW python -c "import json; from tuner.study.config import STUDY_OPTIMIZER_DEFAULTS as S; print(json.dumps(S))")
for r in 1 2 3; do
 for nd in "400 3" "2000 3" "400 8" "2000 8"; do
  set -- $nd
  echo "old $r $1 $2 $(cd /tmp && PYTHONPATH=$OLD OMP_NUM_THREADS=1 python $HERE/pair.py $1 $2 '{}')"
  echo "bare $r $1 $2 $(cd /tmp && PYTHONPATH=$NEW OMP_NUM_THREADS=1 python $HERE/pair.py $1 $2 '{}')"
  echo "study $r $1 $2 $(cd /tmp && PYTHONPATH=$NEW OMP_NUM_THREADS=1 python $HERE/pair.py $1 $2 "$S")"
 done
done
