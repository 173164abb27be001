#!/usr/bin/env bash
# The tenth session's second idle window: the dev suite judges the session's change (crossed
# keys joined through their link, a phantom table's join mended away, a name no column is
# called like declined when the repairs run out, "how many times was X-ed", a named column's
# table kept by pruning); the bundled nl2ql suite after it is the regression check. It runs
# the commit under test (35a2cab, in the worktree /tmp/wt10) with the main checkout's
# virtualenv. Nothing else runs meanwhile: no helper, no tests.
cd /tmp/wt10
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt10 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle10b
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in dev nl2ql; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
