#!/usr/bin/env bash
# The second part of the fifth session's idle window, after idle-2026-11-26-e.sh (started at
# 18:04): the extract suite again with its prompt asking to keep units (no change: reverted,
# docs/evals/experiments/extract-2026-11-26-e-units-kept), then the bundled nl2ql suite as a
# regression check. The assistant and erp suites did not fit in the window.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle5
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step extract-units; datawell eval run extract --out $OUT/eval-extract-units > $OUT/eval-extract-units.txt 2>&1
step nl2ql;     datawell eval run nl2ql --out $OUT/eval-nl2ql > $OUT/eval-nl2ql.txt 2>&1
step done
