"""How fast and how well each embedder embeds: rows a second on the ingest bench's row texts,
and whether the rows that `semantic()` questions must find rank first.

    .venv/bin/python -m bench.embeddings                    # minilm-static and hashing
    .venv/bin/python -m bench.embeddings --models minilm-static,minilm,hashing

Quality, no LLM involved: the corpus is every fixture row that evals embed (the fixtures'
`embed` fields, as `load_fixtures` embeds them). Queries: each nl2ql case whose gold query
orders by `semantic('…')` and asserts a row, and paraphrases written for this check that
share no content word with their row. For each it prints the row's rank in its own dataset
(found = within the gold query's LIMIT, paraphrases: 3) and among all datasets' rows pooled.
The minilm-static model is distilled on first use into --cache (minutes). Never run by the
test suite."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.ingest import bench_embedder, write_csv

# (question, dataset, a text in the row that must rank first): no shared content word.
PARAPHRASES = [
    ("learning about the cosmos", "books", "Counting Stars"),
    ("managing household finances", "books", "Budget Like a Pro"),
    ("artificial intelligence", "books", "Deep Learning Basics"),
    ("maritime adventure", "books", "Tides of Empire"),
    ("caffeine", "products", "Espresso Maker"),
    ("sleeping outside in the wilderness", "products", "Two-Person Tent"),
    ("listening to songs on a plane", "products", "Noise-Cancelling Headphones"),
    ("trimming bushes", "products", "Pruning Shears"),
    ("sick infant", "appointments", "fever and ear ache in a toddler"),
    ("injury playing soccer", "appointments", "sprained ankle from football"),
    ("trouble breathing", "appointments", "shortness of breath at night"),
    ("hypertension", "appointments", "high blood pressure follow-up"),
]


def corpus() -> list[tuple[str, str]]:
    """(dataset, text) of every row the evals embed."""
    from datawell.evals.fixtures import FIXTURES_DIR, embedding_text, load_fixture

    rows = []
    for folder in sorted(FIXTURES_DIR.iterdir()):
        fixture = load_fixture(folder.name)
        for name, spec in fixture.datasets.items():
            if spec.embed:
                rows += [(name, embedding_text(row, spec.embed)) for row in fixture.rows(name)]
    return rows


def queries() -> list[tuple[str, str, str, int]]:
    """(question, dataset, text of the row to find, how high it must rank)."""
    from datawell.evals.suites import load_suite

    found = []
    for case in load_suite("nl2ql").cases:
        query = case.expected.query or ""
        asked = re.search(r"FROM (\w+) .*semantic\('([^']+)'\).*LIMIT (\d+)", query)
        wanted = [a.value[0] for a in case.assert_ if a.type == "rows-contain"]
        if asked and wanted:
            found.append((asked.group(2), asked.group(1), str(wanted[0]), int(asked.group(3))))
    return found + [(question, dataset, text, 3) for question, dataset, text in PARAPHRASES]


async def measure(embedder: Any, texts: list[str], rows: list[tuple[str, str]]) -> None:
    await embedder.embed(["warm up"])  # load (or distill) before the clock starts
    started = time.perf_counter()
    for start in range(0, len(texts), 512):  # the ingestion's batch
        await embedder.embed(texts[start : start + 512])
    rate = len(texts) / (time.perf_counter() - started)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    vectors = np.asarray(await embedder.embed([text for _, text in rows]))
    cases = queries()
    found = pooled = 0
    lines = []
    for question, dataset, text, limit in cases:
        [asked] = await embedder.embed([question])
        order = np.argsort(-(vectors @ np.asarray(asked)))
        ranked = [rows[i] for i in order]
        mine = [row for row in ranked if row[0] == dataset]
        rank = next(i for i, row in enumerate(mine, 1) if text in row[1])
        rank_pooled = next(i for i, row in enumerate(ranked, 1) if text in row[1])
        found += rank <= limit
        pooled += rank_pooled <= 10
        lines.append(f"    {rank:>3} of {len(mine):>3} | {rank_pooled:>3} of {len(ranked)} | {question}")
    print(
        f"{embedder.space or 'minilm'}: {rate:,.0f} rows/s ({len(texts):,} rows, load {load}); "
        f"found {found}/{len(cases)} within the LIMIT, {pooled}/{len(cases)} in the pooled top 10",
        flush=True,
    )
    print("\n".join(lines), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="minilm-static,hashing", help="comma-separated, run in this order")
    parser.add_argument("--rows", type=int, default=4096, help="row texts embedded for the rate")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "datawell-bench-models", help="distilled models"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="embed-bench-") as temporary:
        path = Path(temporary) / "orders.csv"
        write_csv(path, args.rows)
        lines = path.read_text(encoding="utf-8").splitlines()[1:]
    # The text an ingestion embeds: the text fields (customer, city, note) as `field: value`.
    texts = [f"customer: {c}; city: {city}; note: {note}" for _, c, city, *_, note in (x.split(",") for x in lines)]
    rows = corpus()
    for model in args.models.split(","):
        asyncio.run(measure(bench_embedder(model, args.cache), texts, rows))


if __name__ == "__main__":
    main()
