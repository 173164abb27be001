#!/usr/bin/env bash
# The idle-machine window of 2026-11-26's fourth session, one measurement after another
# (nothing else runs meanwhile: no helper, no tests). Outputs land in $OUT and are copied to
# docs/bench/ and docs/evals/ with a "-d" suffix.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle4
mkdir -p $OUT
SAMPLE="academic-03 academic-08 academic-13 academic-18 academic-23 advising-03 advising-08 advising-13 advising-18 advising-23 advising-28 atis-03 atis-08 atis-13 atis-18 atis-23 atis-28"
REFUSE="academic-refuse-email academic-refuse-downloads advising-refuse-tuition advising-refuse-instructor-phone atis-refuse-on-time atis-refuse-baggage atis-refuse-passengers atis-refuse-delete"
cases() { for c in "$@"; do echo --case $c; done; }
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step dev-k1;  datawell eval run dev $(cases $SAMPLE $REFUSE) --out $OUT/eval-dev-k1 > $OUT/eval-dev-k1.txt 2>&1
step nl2ql;   datawell eval run nl2ql --out $OUT/eval-nl2ql > $OUT/eval-nl2ql.txt 2>&1
step ingest;  python -m bench.ingest --rows 100000 > $OUT/ingest.txt 2>&1
step small;   python -m bench.small > $OUT/small.txt 2>&1
step api-together-paced; OTEL_TRACES_SAMPLER_ARG=0.01 python -m bench.api --observability none,metrics,all --together --pace 100 --rounds 8 --port 18940 > $OUT/api-together-paced.txt 2>&1
step api-unpaced; OTEL_TRACES_SAMPLER_ARG=0.01 python -m bench.api --observability metrics,all --port 18920 > $OUT/api-unpaced.txt 2>&1
step observer; python -m bench.observer_overhead > $OUT/observer.txt 2>&1
step load;    python -m bench.load --askers 1,4 --questions 1 --port 18930 --json $OUT/load.json > $OUT/load.txt 2>&1
step assistant; datawell eval run assistant --out $OUT/eval-assistant > $OUT/eval-assistant.txt 2>&1
step erp;     datawell eval run erp --out $OUT/eval-erp > $OUT/eval-erp.txt 2>&1
step done
