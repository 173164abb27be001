#!/usr/bin/env bash
# The second idle window of 2026-12-06 (no helper, test or other model running):
# 1. the validation suite with the query grammar on (issue 50, DATAWELL_QUERY_GRAMMAR=true),
#    everything else as docs/evals/validation/ (2026-12-05, grammar off), so the two differ by
#    the grammar alone;
# 2. the bundled nl2ql, assistant and erp suites with today's rule defaults (issue 47's triage),
#    k = 1, for issue 47's pass-rate condition.
# Run from the main checkout.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/idle-a/evaldata
mkdir -p /tmp/idle-b
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
run() {  # run SUITE OUT [env...]
    local suite=$1 out=$2; shift 2
    step "$out"
    env "$@" datawell eval run "$suite" --out "docs/evals/$out" > "/tmp/idle-b/$out.txt" 2>&1
    cp "/tmp/idle-b/$out.txt" "docs/evals/$out/console.txt"
}
run validation validation-grammar DATAWELL_QUERY_GRAMMAR=true
run nl2ql nl2ql-defaults
run assistant assistant-defaults
run erp erp-defaults
step done
