"""usearch alone (no record, no store), the build rate and recall@10 against exact search at two
linking widths (`expansion_add`), on bench/vectors.py's synthetic vectors; search width 256.
It tells the index's own cost apart from the store's (the record, the batches). Run once on
2026-12-06, idle, nothing else running (docs/bench/usearch-expansion-add-2026-12-06.txt):

    .venv/bin/python -m bench.usearch_linking"""

import time

import numpy as np
from usearch.index import Index

from bench.vectors import DIMENSION, shape, vectors

ROWS, BATCH, QUERIES = 1_000_000, 512, 200
rng = np.random.default_rng(48)
matrix = vectors(rng, ROWS, *shape(rng))
for expansion_add in (48, 64):
    index = Index(
        ndim=DIMENSION, metric="cos", dtype="f16", connectivity=16, expansion_add=expansion_add, expansion_search=256
    )
    started = time.perf_counter()
    for start in range(0, ROWS, BATCH):
        index.add(np.arange(start, min(start + BATCH, ROWS), dtype=np.uint64), matrix[start : start + BATCH], threads=0)
    rate = ROWS / (time.perf_counter() - started)
    questions = matrix[:QUERIES] + 0.05 * rng.standard_normal((QUERIES, DIMENSION), dtype=np.float32)
    truth = [set(np.argpartition(-(matrix @ q), 10)[:10]) for q in questions]
    found = index.search(questions, 10)
    recall = np.mean([len(set(found.keys[i].tolist()) & truth[i]) / 10 for i in range(QUERIES)])
    print(expansion_add, BATCH, f"{rate:.0f}/s recall {recall:.3f}")
