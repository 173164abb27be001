#!/usr/bin/env bash
# The rest of the thirteenth session's window (idle-2026-11-27-h.sh ran dev): nl2ql and
# assistant as regression checks; erp is left out to leave time for the test suite before the
# session ends (its final queries do not change under the new rules, checked offline).
cd /tmp/wt13
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt13 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle13
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
while pgrep -f "datawell eval run dev" > /dev/null; do sleep 5; done
for suite in nl2ql assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
