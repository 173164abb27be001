#!/usr/bin/env bash
# The idle-machine window of 2026-11-26's third session, one measurement after another
# (nothing else runs meanwhile: no helper, no tests). Outputs land in $OUT and are copied to
# docs/bench/ and docs/evals/ with a "-c" suffix.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle3
mkdir -p $OUT
SAMPLE="academic-03 academic-08 academic-13 academic-18 academic-23 advising-03 advising-08 advising-13 advising-18 advising-23 advising-28 atis-03 atis-08 atis-13 atis-18 atis-23 atis-28"
REFUSE="academic-refuse-email academic-refuse-downloads advising-refuse-tuition advising-refuse-instructor-phone atis-refuse-on-time atis-refuse-baggage atis-refuse-passengers atis-refuse-delete"
cases() { for c in "$@"; do echo --case $c; done; }
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step dev-k1;  datawell eval run dev $(cases $SAMPLE $REFUSE) --out $OUT/eval-dev-k1 > $OUT/eval-dev-k1.txt 2>&1
step api;     python -m bench.api --observability all --port 18910 > $OUT/api.txt 2>&1
step api-1pct; OTEL_TRACES_SAMPLER_ARG=0.01 python -m bench.api --observability all --port 18920 > $OUT/api-1pct.txt 2>&1
step api-1pct-paced; OTEL_TRACES_SAMPLER_ARG=0.01 python -m bench.api --observability all --pace 300 --port 18940 > $OUT/api-1pct-paced.txt 2>&1
step api-none-paced; python -m bench.api --observability none --pace 300 --port 18950 > $OUT/api-none-paced.txt 2>&1
step nl2ql;   datawell eval run nl2ql --out $OUT/eval-nl2ql > $OUT/eval-nl2ql.txt 2>&1
step dev-k3;  DATAWELL_QUERY_CANDIDATES=3 datawell eval run dev $(cases $SAMPLE) --out $OUT/eval-dev-k3 > $OUT/eval-dev-k3.txt 2>&1
step erp;     datawell eval run erp --out $OUT/eval-erp > $OUT/eval-erp.txt 2>&1
step load;    python -m bench.load --askers 1,4 --questions 1 --port 18930 --json $OUT/load.json > $OUT/load.txt 2>&1
step ingest;  python -m bench.ingest --rows 100000 > $OUT/ingest.txt 2>&1
step small;   python -m bench.small > $OUT/small.txt 2>&1
step done
