#!/usr/bin/env bash
# The idle window of 2026-12-05 (after the full test run; no helper, test or other model
# running): issue 52's bench.load once (both workloads, 1/4/8 askers, in turn and at once),
# then the first run of the validation suite with the embedded model (issue 50), with the
# rule defaults of issue 47's triage. Run from the main checkout.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/idle/evaldata
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step load
python -m bench.load --json docs/bench/load-2026-12-05-a.json > docs/bench/load-2026-12-05-a.txt 2>&1
step validation
datawell eval run validation --out docs/evals/validation > /tmp/idle/validation.console.txt 2>&1
step done
