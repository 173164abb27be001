#!/usr/bin/env bash
# The sixteenth session's second idle window, after the first (idle-2026-12-03-a.sh) lost
# assistant-clinic-most-no-shows-doctor to the count rule: the rule now needs the question to
# ask how many of the things. Every case the rule fired on in the first window is run again
# (dev: academic-14, advising-13, advising-20; assistant: the whole suite); nl2ql and erp had
# none. It runs the commit under test (in the worktree /tmp/wt16b) with the main checkout's
# virtualenv. Nothing else runs meanwhile.
cd /tmp/wt16b
source /work/main/.venv/bin/activate
export PYTHONPATH=/tmp/wt16b HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle16b
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step assistant; datawell eval run assistant --out $OUT/assistant > $OUT/assistant.console.txt 2>&1
step dev-counted
datawell eval run dev --case academic-14 --case advising-13 --case advising-20 --out $OUT/dev-counted > $OUT/dev-counted.console.txt 2>&1
step done
