"""`python -m tests.observability.serve_scripted PORT`: what `datawell serve` runs (the real
app, the real runs, the in-process worker, logging set up from the settings) with a scripted
model in place of the embedded one: the plan writes `QUERY`, the answer is `ANSWER`, and
column mapping falls back to matching names. Settings from DATAWELL_* and OTEL_* as usual."""

from __future__ import annotations

import sys

import uvicorn
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from datawell.app import create_app
from datawell.config import Settings
from datawell.graphs.assistant.state import PlanOutput
from datawell.llm.embeddings import HashingEmbedder
from datawell.llm.models import FixedChatModels
from datawell.llm.scripted import ScriptedChatModel
from datawell.observability import logs
from datawell.services import Overrides

QUERY = "SELECT customer, total FROM orders ORDER BY total DESC"
ANSWER = "Ada paid the most."


def answer(messages: list[BaseMessage]) -> str | BaseModel:
    text = "\n".join(str(m.content) for m in messages)
    if "Task: write the query." in text:
        return PlanOutput(query=QUERY)
    if "What the queries for this question found" in text:
        return ANSWER
    return "no mapping"


def main() -> None:
    settings = Settings()
    logs.configure(settings.log_format)
    model = ScriptedChatModel([answer] * 10_000)
    app = create_app(settings, Overrides(models=FixedChatModels(model), embedder=HashingEmbedder()))
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_config=None)


if __name__ == "__main__":
    main()
