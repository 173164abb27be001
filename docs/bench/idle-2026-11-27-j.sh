#!/usr/bin/env bash
# The fifteenth session's idle window: the dev suite judges the session's changes (a filter
# on one end of a move read on the end the question puts its value at; a ranking's plain
# measure shown; a result that leaves out a name the question gives doubted once; a text
# filtered on a column that does not store it read on the one that does); the bundled nl2ql,
# erp and assistant suites after it are the regression checks. It runs the commit under test
# (in the worktree /tmp/wt15) with the main checkout's virtualenv. Nothing else runs
# meanwhile: no helper, no tests.
cd /tmp/wt15
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt15 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle15
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
