#!/usr/bin/env bash
# The twelfth session's idle window: the dev suite judges the session's changes (filters on
# text the question never says, dropped with their joins when one cannot run; an empty
# result's repair told of them); the bundled nl2ql, erp and assistant suites after it are the
# regression checks. It runs the commit under test (in the worktree /tmp/wt12) with the main
# checkout's virtualenv. Nothing else runs meanwhile: no helper, no tests.
cd /tmp/wt12
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt12 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle12
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
