#!/usr/bin/env bash
# The third idle window of 2026-12-06 (no helper, test or other model running): issue 52's
# three runs of bench.load, with prompts kept per sequence (the default) and with
# DATAWELL_EMBEDDED_MODEL_SHARE_PROMPTS (`--share-prompts`, never measured on the model before),
# alternated so that a drift of the machine falls on both. Run a of the default is
# docs/bench/load-2026-12-06-a (04:00 UTC, one workload). Run from the main checkout.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
load() {  # load NAME [bench.load options...]
    local name=$1; shift
    step "$name"
    python -m bench.load "$@" --json "docs/bench/$name.json" > "docs/bench/$name.txt" 2>&1
}
load load-2026-12-06-shared-a --workloads one --share-prompts
load load-2026-12-06-b --workloads one,own
load load-2026-12-06-shared-b --workloads one --share-prompts
load load-2026-12-06-c --workloads one,own
# Not run: the two shared runs both put four at once at 3.6-3.9x in turn, so the third was
# dropped (the window stopped after run c) for the vector bench.
# load load-2026-12-06-shared-c --workloads one,own --share-prompts
step done
