#!/usr/bin/env bash
# The fourteenth session's idle window: the dev suite judges the session's changes (a refused
# query mended as written, then fitted; a name several columns share read as the one the
# question describes; a ranking's measure shown when the question does not say what to show);
# the bundled nl2ql, erp and assistant suites after it are the regression checks. It runs the
# commit under test (in the worktree /tmp/wt14) with the main checkout's virtualenv. Nothing
# else runs meanwhile: no helper, no tests.
cd /tmp/wt14
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt14 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle14
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
