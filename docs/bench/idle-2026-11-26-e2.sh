#!/usr/bin/env bash
# The second part of the fifth session's idle window, after idle-2026-11-26-e.sh: the extract
# suite again (its prompt changed during the window: values keep their units), then the
# bundled suites as regression checks.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle5
until grep -q "=== done" /tmp/idle5.log; do sleep 5; done
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step extract-units; datawell eval run extract --out $OUT/eval-extract-units > $OUT/eval-extract-units.txt 2>&1
step nl2ql;     datawell eval run nl2ql --out $OUT/eval-nl2ql > $OUT/eval-nl2ql.txt 2>&1
step assistant; datawell eval run assistant --out $OUT/eval-assistant > $OUT/eval-assistant.txt 2>&1
step erp;       datawell eval run erp --out $OUT/eval-erp > $OUT/eval-erp.txt 2>&1
step done
