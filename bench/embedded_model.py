"""How fast the embedded model is on this machine: first start (join + sha256 + load), a
verified restart, one structured text-to-SQL answer, and decode speed.

    .venv/bin/python bench/embedded_model.py [--threads N]

Joins the 1.1 GB model into a fresh temporary folder (removed at the end), so the first
number is what a fresh data folder costs."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from langchain_core.callbacks import UsageMetadataCallbackHandler
from pydantic import BaseModel, Field

from datawell.config import Settings
from datawell.llm import embedded, embedded_runtime, weights
from datawell.llm.litellm_models import LiteLLMChatModels


class SqlAnswer(BaseModel):
    sql: str = Field(description="one SQLite SELECT statement that answers the question")


QUESTION = [
    (
        "system",
        "Write one SQLite SELECT statement. Tables: customers(id INTEGER, name TEXT, city TEXT); "
        "orders(id INTEGER, customer_id INTEGER, total REAL, created_at TIMESTAMP).",
    ),
    ("user", "How many orders did each customer place in 2024? Include customers with none."),
]


async def main(threads: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="datawell-bench-"))
    try:
        settings = Settings(
            data_dir=folder, model=None, query_model=None, embedded_model_threads=threads, llm_timeout_seconds=1800
        )
        model = LiteLLMChatModels(settings).for_stage("query")
        runtime = embedded.runtime()

        started = time.monotonic()
        weights.ensure_model_file(runtime.models_dir)
        joined = time.monotonic() - started
        started = time.monotonic()
        weights.ensure_model_file(runtime.models_dir)
        verified = time.monotonic() - started
        started = time.monotonic()
        await asyncio.to_thread(runtime.load)
        loaded = time.monotonic() - started
        print(f"threads            {threads or embedded_runtime.default_threads()} of {os.cpu_count()} cores")
        print(f"join + sha256      {joined:6.1f} s (first start only)")
        print(f"verified restart   {verified * 1000:6.1f} ms")
        print(f"model load         {loaded:6.1f} s")

        usage = UsageMetadataCallbackHandler()
        started = time.monotonic()
        answer = await model.with_structured_output(SqlAnswer).ainvoke(QUESTION, config={"callbacks": [usage]})
        print(
            f"structured answer  {time.monotonic() - started:6.1f} s, {usage.usage_metadata[embedded_runtime.EMBEDDED_MODEL]}"
        )
        print(f"                   {answer.sql}")  # type: ignore[union-attr]

        usage = UsageMetadataCallbackHandler()
        started = time.monotonic()
        first_token = None
        async for chunk in model.astream(
            "Write a Python function that checks whether a number is prime.",
            config={"callbacks": [usage]},
        ):
            if chunk.content and first_token is None:
                first_token = time.monotonic() - started
        total = time.monotonic() - started
        used = usage.usage_metadata[embedded_runtime.EMBEDDED_MODEL]
        tokens = used["output_tokens"]
        assert first_token is not None
        print(f"first token        {first_token:6.1f} s ({used['input_tokens']} prompt tokens)")
        print(f"decode             {(tokens - 1) / (total - first_token):6.1f} tokens/s ({tokens} tokens)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=0, help="CPU threads; 0 = all cores but one")
    asyncio.run(main(parser.parse_args().threads))
