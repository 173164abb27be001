#!/usr/bin/env bash
# The sixteenth session's idle window: the dev suite judges the session's changes (an integer
# asked for cast to one; a filter to a placeholder nobody asked for dropped; a union of one count
# per value grouped by it; another table's key counted once per thing asked; a ratio asked but
# not divided computed); the bundled nl2ql,
# erp and assistant suites after it are the regression checks. It runs the commit under test
# (in the worktree /tmp/wt16) with the main checkout's virtualenv. Nothing else runs
# meanwhile: no helper, no tests.
cd /tmp/wt16
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt16 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle16
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
