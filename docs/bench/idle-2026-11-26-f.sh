#!/usr/bin/env bash
# The idle-machine window of 2026-11-26's sixth session, one measurement after another
# (nothing else runs meanwhile: no helper, no tests). Outputs land in $OUT and are copied to
# docs/bench/ and docs/evals/ with an "-f" suffix.
cd /work/main
source .venv/bin/activate
export HF_HUB_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True DATAWELL_DATA_DIR=/tmp/evaldata
OUT=/tmp/idle6
mkdir -p $OUT
step() { echo "=== $1 $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; }
# 1. Decode at a question's context (about 1,100 prompt tokens a sequence, found in the
#    prompt cache): one KV cache for the four sequences against one each.
step decode-unified; python -m bench.decode_batch --context 1100 --tokens 48 --repeats 3 > $OUT/decode-unified.txt 2>&1
step decode-split;   python -m bench.decode_batch --context 1100 --tokens 48 --repeats 3 --split-kv --kv-context 8192 > $OUT/decode-split.txt 2>&1
# 2. Four askers against one, one question each, both ways, twice (interleaved).
for round in 1 2; do
  step load-unified-$round; python -m bench.load --askers 1,4 --questions 1 --json $OUT/load-unified-$round.json > $OUT/load-unified-$round.txt 2>&1
  step load-split-$round;   python -m bench.load --askers 1,4 --questions 1 --split-kv --kv-context 8192 --json $OUT/load-split-$round.json > $OUT/load-split-$round.txt 2>&1
done
step done
