#!/usr/bin/env bash
# The first idle window of 2026-12-06 (fresh machine, no helper, test or other model running):
# the dev suite with today's rule defaults (issue 47's triage: nine wording rules off), k = 1,
# for issue 47's condition that dev stays within one standard error of 71.0%.
# Run from the main checkout.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/idle-a/evaldata
mkdir -p /tmp/idle-a
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step dev-defaults
datawell eval run dev --out docs/evals/dev-defaults > /tmp/idle-a/dev.txt 2>&1
cp /tmp/idle-a/dev.txt docs/evals/dev-defaults/console.txt
step done
