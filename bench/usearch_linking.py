"""usearch alone (no record, no store): build rate and recall@10 against exact search for
index precisions (`--dtypes`), linking widths (`--expansion-add`) and search widths (`--widths`),
on bench/vectors.py's synthetic vectors. With `--rerank N` a search takes the index's N nearest
and orders them by exact cosine from half-precision copies, as the store does with its record.
It tells the index's own cost apart from the store's (the record, the batches). Runs on the
idle machine, nothing else running (docs/bench/usearch-*.txt):

    .venv/bin/python -m bench.usearch_linking                                  # 2026-12-06, f16
    .venv/bin/python -m bench.usearch_linking --dtypes i8 --expansion-add 64,32,24 \\
        --widths 512,1024,2048 --rerank 40                                     # 2026-12-06, i8
    .venv/bin/python -m bench.usearch_linking --dtypes i8 --connectivity 12,16 --expansion-add 32 \\
        --widths 2048 --rerank 40                                              # 2026-12-06 evening"""

import argparse
import time

import numpy as np
from usearch.index import Index

from bench.vectors import DIMENSION, shape, vectors

BATCH, QUERIES = 512, 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dtypes", default="f16")
    parser.add_argument("--connectivity", default="16", help="HNSW neighbours per node, e.g. 12,16")
    parser.add_argument("--expansion-add", default="48,64")
    parser.add_argument("--widths", default="256")
    parser.add_argument("--rerank", type=int, default=0, help="candidates re-ordered exactly (0: none)")
    options = parser.parse_args()
    rng = np.random.default_rng(48)
    matrix = vectors(rng, options.rows, *shape(rng))
    copies = matrix.astype(np.float16)
    questions = matrix[:QUERIES] + 0.05 * rng.standard_normal((QUERIES, DIMENSION), dtype=np.float32)
    truth = [set(np.argpartition(-(matrix @ q), 10)[:10].tolist()) for q in questions]
    graphs = [
        (c, e) for c in map(int, options.connectivity.split(",")) for e in map(int, options.expansion_add.split(","))
    ]
    for dtype in options.dtypes.split(","):
        for connectivity, expansion_add in graphs:
            index = Index(
                ndim=DIMENSION, metric="cos", dtype=dtype, connectivity=connectivity, expansion_add=expansion_add
            )
            started = time.perf_counter()
            for start in range(0, options.rows, BATCH):
                keys = np.arange(start, min(start + BATCH, options.rows), dtype=np.uint64)
                index.add(keys, matrix[start : start + BATCH], threads=0)
            rate = options.rows / (time.perf_counter() - started)
            for width in map(int, options.widths.split(",")):
                index.expansion_search = width
                recall, times = [], []
                for question, expected in zip(questions, truth, strict=True):
                    began = time.perf_counter()
                    found = index.search(question, options.rerank or 10).keys
                    if options.rerank:
                        rows = copies[found].astype(np.float32)
                        found = found[np.argsort(-(rows @ question) / np.linalg.norm(rows, axis=1))[:10]]
                    times.append(time.perf_counter() - began)
                    recall.append(len(set(found.tolist()) & expected) / 10)
                print(
                    f"{dtype} connectivity {connectivity} expansion_add {expansion_add}: {rate:.0f} vectors/s; "
                    f"search width {width}, "
                    f"rerank {options.rerank}: recall@10 {np.mean(recall):.3f}, "
                    f"p50 {np.median(times) * 1000:.1f} ms, p95 {np.percentile(times, 95) * 1000:.1f} ms",
                    flush=True,
                )


if __name__ == "__main__":
    main()
