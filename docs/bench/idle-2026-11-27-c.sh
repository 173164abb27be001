#!/usr/bin/env bash
# The tenth session's first idle window: the bundled erp and assistant suites on main as it
# stood at the session's start (32edcd6, in the worktree /tmp/wt-base, with the main
# checkout's virtualenv). They were last run in the seventh session; the eighth and ninth
# changed the query path (the blind second ask, years mended). Nothing else runs meanwhile.
cd /tmp/wt-base
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt-base HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle10a
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
for suite in erp assistant; do
  step $suite; datawell eval run $suite --out $OUT/$suite > $OUT/$suite.console.txt 2>&1
done
step done
