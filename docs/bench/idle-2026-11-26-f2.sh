#!/usr/bin/env bash
# The sixth session's idle window, part two: the dev cases this session's mends and "per X"
# rules were written for (a subset chosen for them, so its score is not the suite's), then
# the whole bundled nl2ql suite as the regression check.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle6
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
CASES=""
for c in academic-01 academic-05 academic-11 academic-16 advising-17 advising-19 advising-23 advising-25 \
         atis-14 atis-16 atis-17 atis-20 atis-24; do CASES="$CASES --case $c"; done
step dev-targeted; datawell eval run dev $CASES --out $OUT/eval-dev-targeted > $OUT/eval-dev-targeted.txt 2>&1
step nl2ql;        datawell eval run nl2ql --out $OUT/eval-nl2ql > $OUT/eval-nl2ql.txt 2>&1
step done
# Three more rounds of four askers against one on the default (unified) KV cache, for the spread.
for round in 3 4 5; do
  step load-unified-$round; python -m bench.load --askers 1,4 --questions 1 --json $OUT/load-unified-$round.json > $OUT/load-unified-$round.txt 2>&1
done
step done-3
