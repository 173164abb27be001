#!/usr/bin/env bash
# The idle-machine window of 2026-11-27's second session, one eval after another (nothing
# else runs meanwhile: no helper, no tests). It runs the branch's worktree (/tmp/wt) with the
# main checkout's virtualenv. Reports land in $OUT/<suite>. The dev suite first: it judges
# the change (a repair that repeats the refused query is asked again without it; years
# mended); the bundled suites after it are the regression checks.
cd /tmp/wt
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle9
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
