#!/usr/bin/env bash
# The thirteenth session's idle window: the dev suite judges the session's changes (rows a
# filtering join repeats shown once; a join that only passes a key along dropped under an
# aggregate; listed values given their rows' names); the bundled nl2ql, erp and assistant suites after it are the
# regression checks. It runs the commit under test (in the worktree /tmp/wt13) with the main
# checkout's virtualenv. Nothing else runs meanwhile: no helper, no tests.
cd /tmp/wt13
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt13 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle13
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
