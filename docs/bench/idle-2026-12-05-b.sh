#!/usr/bin/env bash
# The second idle window of 2026-12-05 (after the full test run; no helper, test or other
# model running): the validation suite with three retrieved examples per question (issue 50,
# DATAWELL_RETRIEVED_EXAMPLES=3), everything else as the morning's run
# (docs/evals/validation/), so the two differ by the retrieval alone. Run from the main checkout.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/idle-b/evaldata
mkdir -p /tmp/idle-b
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step validation-examples3
DATAWELL_RETRIEVED_EXAMPLES=3 datawell eval run validation --out docs/evals/validation-examples3 \
    > /tmp/idle-b/console.txt 2>&1
cp /tmp/idle-b/console.txt docs/evals/validation-examples3/console.txt
step done
