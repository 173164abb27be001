#!/usr/bin/env bash
# The idle-machine window of 2026-11-26's fifth session, one measurement after another
# (nothing else runs meanwhile: no helper, no tests). Outputs land in $OUT and are copied to
# docs/bench/ and docs/evals/ with an "-e" suffix.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle5
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step decode-batch; python -m bench.decode_batch --tokens 64 --repeats 3 > $OUT/decode-batch.txt 2>&1
step observer; python -m bench.observer_overhead > $OUT/observer.txt 2>&1
step api; OTEL_TRACES_SAMPLER_ARG=0.01 python -m bench.api --observability none,metrics,all --interleaved --together --pace 300 --seconds 3 --rounds 20 --port 18940 > $OUT/api.txt 2>&1
step extract;  datawell eval run extract --out $OUT/eval-extract > $OUT/eval-extract.txt 2>&1
step dev;      datawell eval run dev --out $OUT/eval-dev > $OUT/eval-dev.txt 2>&1
step done
