#!/usr/bin/env bash
# The eleventh session's idle window: the dev suite judges the session's change (dead joins,
# the table a joined query did not join, a number joined with a text, an extreme of the
# ordering column, a subquery selecting an outer column, an empty result told where its
# filter text is stored); the bundled nl2ql, erp and assistant suites after it are the
# regression checks. It runs the commit under test (in the worktree /tmp/wt11) with the main
# checkout's virtualenv. Nothing else runs meanwhile: no helper, no tests.
cd /tmp/wt11
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt11 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle11
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
