#!/usr/bin/env bash
# The second idle-machine window of 2026-11-26, one measurement after another (nothing else
# runs meanwhile: no helper, no tests). Outputs land in $OUT and are copied to docs/bench/
# and docs/evals/ with an "-idle" suffix.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
OUT=/tmp/idle2
SAMPLE="academic-03 academic-08 academic-13 academic-18 academic-23 advising-03 advising-08 advising-13 advising-18 advising-23 advising-28 atis-03 atis-08 atis-13 atis-18 atis-23 atis-28"
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step load;    python -m bench.load --askers 1,4,8 --questions 1 --port 18930 --json $OUT/load.json > $OUT/load.txt 2>&1
step ingest;  python -m bench.ingest --rows 100000 > $OUT/ingest.txt 2>&1
step small;   python -m bench.small > $OUT/small.txt 2>&1
step api;     python -m bench.api --observability all --seconds 5 --port 18910 > $OUT/api.txt 2>&1
step api-sampled; OTEL_TRACES_SAMPLER_ARG=0.01 python -m bench.api --observability all --seconds 5 --port 18920 > $OUT/api-sampled.txt 2>&1
step dev-sample; DATAWELL_DATA_DIR=/tmp/evaldata datawell eval run dev $(for c in $SAMPLE; do echo --case $c; done) --out $OUT/eval-dev-sample > $OUT/eval-dev-sample.txt 2>&1
step nl2ql;   DATAWELL_DATA_DIR=/tmp/evaldata datawell eval run nl2ql --out $OUT/eval-nl2ql > $OUT/eval-nl2ql.txt 2>&1
step done
