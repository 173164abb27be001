#!/usr/bin/env bash
# The idle-machine window of 2026-11-27's session, one eval after another (nothing else runs
# meanwhile: no helper, no tests). Reports land in $OUT/<suite> and are copied to
# docs/evals/<suite>. The dev suite first: it judges this session's change; the bundled
# suites after it are the regression checks.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle8
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
