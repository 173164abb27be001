#!/usr/bin/env bash
# The idle-machine measurements, one after another (nothing else runs meanwhile).
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
OUT=/tmp/idle
PG=postgresql://postgres@127.0.0.1:55432/postgres
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
step export;  python -m bench.export --port 18900 --postgres $PG > $OUT/export.txt 2>&1
step ingest;  python -m bench.ingest --rows 100000 > $OUT/ingest.txt 2>&1
step small;   python -m bench.small > $OUT/small.txt 2>&1
step api;     python -m bench.api --observability all --port 18910 > $OUT/api.txt 2>&1
step api-sampled; OTEL_TRACES_SAMPLER_ARG=0.01 python -m bench.api --observability all --port 18920 > $OUT/api-sampled.txt 2>&1
step load;    python -m bench.load --port 18930 --json $OUT/load.json > $OUT/load.txt 2>&1
step ask-off; DATAWELL_METRICS=off python -m bench.ask --json $OUT/ask-off.json > $OUT/ask-off.txt 2>&1
step ask-on;  (python -m bench.api sink --port 18950 > /dev/null 2>&1 &) ; sleep 3
DATAWELL_METRICS=open OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:18950 python -m bench.ask --json $OUT/ask-on.json > $OUT/ask-on.txt 2>&1
pkill -f "bench.api sink --port 18950"
step dev;     DATAWELL_DATA_DIR=/tmp/evaldata datawell eval run dev --out $OUT/eval-dev > $OUT/eval-dev.txt 2>&1
step done
