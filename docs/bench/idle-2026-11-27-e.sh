#!/usr/bin/env bash
# Started after idle-2026-11-27-d.sh ended (it waits for that window's last line): the bundled
# erp suite on the same commit (35a2cab, /tmp/wt10), the regression check of the change's one
# bundled refusal (erp-refuse-phone). Nothing else runs meanwhile.
until grep -q "^=== done" /tmp/idle10b.log; do sleep 5; done
cd /tmp/wt10
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt10 HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle10b
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step erp; datawell eval run erp --out $OUT/erp > $OUT/erp.console.txt 2>&1
step done
